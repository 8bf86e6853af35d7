package controllers

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/pod/podutil"
	"github.com/nodelet/nodelet/internal/resources/admission"
)

func criticalPod(p *corev1.Pod) *corev1.Pod {
	p.Spec.Priority = ptr.To[int32](2000000000)
	p.Spec.PriorityClassName = "system-cluster-critical"
	return p
}

// The admission record on its own (in-memory pods and Node, no API server,
// no CRI): a critical pod's victims stop counting at once, and the orders
// to stop them are handed out once.
func TestAdmissionsPreemptForACriticalPod(t *testing.T) {
	state := &fakeAdmissionState{node: memoryNode("1Gi"), pods: []*corev1.Pod{
		memoryPod("low", 1, "600Mi"),
		criticalPod(memoryPod("critical", 2, "600Mi")),
		memoryPod("later", 3, "300Mi"),
	}}
	state.pods[0].Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://1"}}
	a := &admissions{}

	result, preempted, err := a.judge(context.Background(), state.pods[1], state.reader(), admitter(t))
	if err != nil {
		t.Fatal(err)
	}
	if !result.Admit || len(result.Preempt) != 0 {
		t.Fatalf("critical pod: %+v, want admitted (the victims come apart)", result)
	}
	if len(preempted) != 1 || preempted[0].victim.Name != "low" || preempted[0].preemptorUID != "uid-critical" || preempted[0].resource != corev1.ResourceMemory {
		t.Fatalf("preemptions %+v, want low stopped for critical's memory", preempted)
	}
	if want := (PodEviction{Failure: podstatus.Failure{Reason: admission.ReasonPreempting, Message: admission.PreemptedMessage}, GracePeriodSeconds: podutil.TerminationGracePeriodSeconds(state.pods[0])}); preempted[0].order != want {
		t.Errorf("order %+v, want %+v", preempted[0].order, want)
	}
	// Judged again, nothing new is preempted; the victim's order stays
	// for its reconcile, and the pod judged next counts critical, not low.
	if _, again, _ := a.judge(context.Background(), state.pods[1], state.reader(), admitter(t)); len(again) != 0 {
		t.Errorf("a second judgement preempted %d more pods", len(again))
	}
	if _, ok := a.preemption("uid-low"); !ok {
		t.Errorf("no order to stop low")
	}
	if diff := cmp.Diff(map[string]string{"later": "admitted", "low": admission.ReasonPreempting}, answers(t, a, state, []string{"later", "low"})); diff != "" {
		t.Errorf("answers after the preemption (-want +got):\n%s", diff)
	}
	// Once low has left the cache, its order goes with it at the next
	// judgement.
	state.pods = append(state.pods[1:], memoryPod("next", 4, "100Mi"))
	answers(t, a, state, []string{"next"})
	if _, ok := a.preemption("uid-low"); ok {
		t.Errorf("the order to stop low outlived the pod")
	}
}

// The reconciler end to end: a real API server (envtest), the CRI fake of
// k8s.io/cri-api/pkg/apis/testing, and the real Admitter. A critical pod
// the node has no room for stops the pod in its way, which ends Failed with
// the kubelet's reason, event and DisruptionTarget condition, and starts
// once that pod has stopped.
func TestReconcilerPreemptsForACriticalPod(t *testing.T) {
	env := startReconcilerWith(t, func(r *PodReconciler) { r.Admit = admitter(t) })
	env.createNode(t, memoryNode("1Gi"))
	env.createNamespace(t, "preempt")
	ctx := context.Background()

	low := testPod("preempt", "low")
	low.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("600Mi")}
	if err := env.client.Create(ctx, low); err != nil {
		t.Fatal(err)
	}
	low = env.waitForPod(t, types.NamespacedName{Namespace: "preempt", Name: "low"}, "low to run", running)

	crit := criticalPod(testPod("preempt", "critical"))
	crit.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("600Mi")}
	if err := env.client.Create(ctx, crit); err != nil {
		t.Fatal(err)
	}
	got := env.waitForPod(t, types.NamespacedName{Namespace: "preempt", Name: "low"}, "low to be preempted", func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		return nil
	})
	if got.Status.Reason != admission.ReasonPreempting || got.Status.Message != admission.PreemptedMessage {
		t.Errorf("low: reason %q, message %q; want %q, %q", got.Status.Reason, got.Status.Message, admission.ReasonPreempting, admission.PreemptedMessage)
	}
	if !slices.ContainsFunc(got.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue &&
			c.Reason == corev1.PodReasonTerminationByKubelet && c.Message == admission.PreemptedDisruptionMessage
	}) {
		t.Errorf("low has no DisruptionTarget condition: %+v", got.Status.Conditions)
	}
	if event := "Warning Preempting " + admission.PreemptedMessage; !slices.Contains(env.recordedEvents(), event) {
		t.Errorf("no event %q among %q", event, env.recordedEvents())
	}
	for _, c := range env.runtimeContainers(t, low.UID) {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("low's container %s still runs", c.Metadata.Name)
		}
	}
	env.waitForPod(t, types.NamespacedName{Namespace: "preempt", Name: "critical"}, "the critical pod to run", running)
}
