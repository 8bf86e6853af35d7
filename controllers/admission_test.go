package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/resources/admission"
)

// The admission record on its own, with in-memory pods, Node and runtime
// records (no API server, no CRI): which pods it admits, whatever the
// order they come in.

func memoryNode(allocatable string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: testNodeName},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse(allocatable),
			corev1.ResourcePods:   resource.MustParse("110"),
		}},
	}
}

// memoryPod asks for memory, created sec seconds into the test.
func memoryPod(name string, sec int, memory string) *corev1.Pod {
	p := testPod("ns", name)
	p.UID = types.UID("uid-" + name)
	p.CreationTimestamp = metav1.NewTime(time.Unix(1700000000+int64(sec), 0))
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
	return p
}

type fakeAdmissionState struct {
	mu      sync.Mutex
	pods    []*corev1.Pod
	node    *corev1.Node
	runtime map[types.UID]bool
}

func (s *fakeAdmissionState) reader() admissionReader {
	return admissionReader{
		pods: func(context.Context) ([]*corev1.Pod, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return slices.Clone(s.pods), nil
		},
		node: func(context.Context) (*corev1.Node, error) { return s.node, nil },
		runtimeState: func(_ context.Context, uid types.UID) (bool, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.runtime[uid], nil
		},
	}
}

func admitter(t *testing.T) AdmitFunc {
	t.Helper()
	a, err := admission.New(admission.Node{OS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	return a.Admit
}

// answers judges pods in the given order and returns who was admitted.
func answers(t *testing.T, a *admissions, state *fakeAdmissionState, order []string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, name := range order {
		var pod *corev1.Pod
		for _, p := range state.pods {
			if p.Name == name {
				pod = p
			}
		}
		r, _, err := a.judge(context.Background(), pod, state.reader(), admitter(t))
		if err != nil {
			t.Fatal(err)
		}
		got[name] = r.Reason
		if r.Admit {
			got[name] = "admitted"
		}
	}
	return got
}

func TestAdmissionsJudgeInCreationOrderWhateverTheReconcileOrder(t *testing.T) {
	// 1Gi holds two pods of 400Mi; the fourth (300Mi) would fit beside
	// the first two, and is admitted; the third is refused.
	pods := func() []*corev1.Pod {
		return []*corev1.Pod{
			memoryPod("d", 3, "300Mi"), memoryPod("b", 1, "400Mi"), memoryPod("c", 2, "400Mi"),
			memoryPod("a-same-second", 1, "400Mi"),
		}
	}
	want := map[string]string{"a-same-second": "admitted", "b": "admitted", "c": "OutOfmemory", "d": "OutOfmemory"}
	for _, order := range [][]string{
		{"a-same-second", "b", "c", "d"}, {"d", "c", "b", "a-same-second"}, {"c", "a-same-second", "d", "b"},
	} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			state := &fakeAdmissionState{pods: pods(), node: memoryNode("1Gi")}
			if diff := cmp.Diff(want, answers(t, &admissions{}, state, order)); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmissionsCountOnlyAdmittedActivePods(t *testing.T) {
	state := &fakeAdmissionState{node: memoryNode("1Gi"), pods: []*corev1.Pod{
		memoryPod("big", 1, "800Mi"), memoryPod("second", 2, "800Mi"),
	}}
	a := &admissions{}
	if diff := cmp.Diff(map[string]string{"big": "admitted", "second": "OutOfmemory"}, answers(t, a, state, []string{"second", "big"})); diff != "" {
		t.Fatalf("before big ends (-want +got):\n%s", diff)
	}
	// The refused pod never counts; once big has ended, a third fits.
	state.pods[0].Status.Phase = corev1.PodSucceeded
	state.pods[1].Status.Phase = corev1.PodFailed
	state.pods = append(state.pods, memoryPod("third", 3, "800Mi"))
	if diff := cmp.Diff(map[string]string{"third": "admitted"}, answers(t, a, state, []string{"third"})); diff != "" {
		t.Errorf("after big ended (-want +got):\n%s", diff)
	}
	// A deleted pod leaves the record with the cache.
	state.pods = state.pods[2:]
	state.pods = append(state.pods, memoryPod("fourth", 4, "800Mi"))
	if diff := cmp.Diff(map[string]string{"fourth": "OutOfmemory"}, answers(t, a, state, []string{"fourth"})); diff != "" {
		t.Errorf("beside third (-want +got):\n%s", diff)
	}
	if _, ok := a.judged["uid-big"]; ok {
		t.Errorf("the record still holds a pod gone from the cache")
	}
}

func TestAdmissionsAfterARestartCountRunningPodsFirst(t *testing.T) {
	// Before the restart: "old" was admitted but nodelet stopped before
	// making anything for it; "young", created later, runs. After it,
	// young counts for whoever is judged first, so old no longer fits; a
	// running pod is never refused, even one that overflows the node.
	young := memoryPod("young", 5, "700Mi")
	young.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://1"}}
	sandboxOnly := memoryPod("sandbox-only", 6, "700Mi")
	state := &fakeAdmissionState{node: memoryNode("1Gi"), runtime: map[types.UID]bool{sandboxOnly.UID: true},
		pods: []*corev1.Pod{memoryPod("old", 1, "400Mi"), young, sandboxOnly}}
	want := map[string]string{"old": "OutOfmemory", "young": "admitted", "sandbox-only": "admitted"}
	if diff := cmp.Diff(want, answers(t, &admissions{}, state, []string{"old", "young", "sandbox-only"})); diff != "" {
		t.Errorf("answers after a restart (-want +got):\n%s", diff)
	}
}

func TestAdmissionsDoNotAdmitPodsBeingDeleted(t *testing.T) {
	deleting := memoryPod("deleting", 1, "800Mi")
	deleting.DeletionTimestamp = ptrTime(metav1.NewTime(time.Unix(1700000010, 0)))
	state := &fakeAdmissionState{node: memoryNode("1Gi"), pods: []*corev1.Pod{deleting, memoryPod("next", 2, "800Mi")}}
	if diff := cmp.Diff(map[string]string{"next": "admitted"}, answers(t, &admissions{}, state, []string{"next"})); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

// The reconciler's admission end to end: a real API server (envtest), the
// CRI fake of k8s.io/cri-api/pkg/apis/testing, and the real Admitter.

func (e *reconcilerEnv) createNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	status := node.Status
	if err := e.client.Create(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	node.Status = status
	if err := e.client.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
}

func (e *reconcilerEnv) waitRejected(t *testing.T, pod *corev1.Pod, reason, message string) {
	t.Helper()
	got := e.waitForPod(t, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, "pod "+pod.Name+" to be rejected", func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodFailed {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		return nil
	})
	if got.Status.Reason != reason || got.Status.Message != "Pod was rejected: "+message {
		t.Errorf("pod %s: reason %q, message %q; want %q, %q", pod.Name, got.Status.Reason, got.Status.Message, reason, "Pod was rejected: "+message)
	}
	event := "Warning " + reason + " " + message
	if !slices.Contains(e.recordedEvents(), event) {
		t.Errorf("no event %q among %q", event, e.recordedEvents())
	}
	if sandboxes := e.runtimeSandboxes(t, got.UID); len(sandboxes) != 0 {
		t.Errorf("the runtime holds %d sandboxes of the rejected pod %s", len(sandboxes), pod.Name)
	}
}

func TestReconcilerRejectsPodsTheNodeHasNoRoomFor(t *testing.T) {
	env := startReconcilerWith(t, func(r *PodReconciler) { r.Admit = admitter(t) })
	env.createNode(t, memoryNode("1Gi"))
	env.createNamespace(t, "adm")

	big := testPod("adm", "too-much-cpu")
	big.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	if err := env.client.Create(context.Background(), big); err != nil {
		t.Fatal(err)
	}
	env.waitRejected(t, big, "OutOfcpu", "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000")

	// A burst of four pods of 400Mi: the first two in creation order run
	// (names break ties within a second, in the order they are made).
	var burst []*corev1.Pod
	for i := range 4 {
		p := testPod("adm", fmt.Sprintf("burst-%d", i))
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("400Mi")}
		if err := env.client.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		burst = append(burst, p)
	}
	for _, p := range burst[:2] {
		env.waitForPod(t, types.NamespacedName{Namespace: "adm", Name: p.Name}, p.Name+" to run", running)
	}
	for _, p := range burst[2:] {
		env.waitRejected(t, p, "OutOfmemory", fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: %d, capacity: %d", 400<<20, 800<<20, 1<<30))
	}
}
