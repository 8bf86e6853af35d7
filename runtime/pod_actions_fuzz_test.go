package runtime

// FuzzComputePodActions builds a pod and the runtime's record of it from
// fuzz bytes, the record decoded from CRI statuses whose annotations are
// as the runtime returns them (damaged ones included), and checks that
// the plan is one SyncPod can carry out.

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// byteReader hands out fuzz bytes as choices; past the end every choice
// is the first.
type byteReader struct{ data []byte }

func (r *byteReader) next() int {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b)
}

func (r *byteReader) pick(n int) int { return r.next() % n }
func (r *byteReader) bool() bool     { return r.next()%2 == 1 }

func choose[T any](r *byteReader, options ...T) T { return options[r.pick(len(options))] }

var fuzzNames = []string{"a", "b", "c", "d", ""}

// Annotation values as a runtime may hand them back: nodelet's own, and
// what another writer or a damaged store leaves.
var (
	fuzzCounts   = []string{"0", "1", "5", "", "-1", "x", "2147483647", "9223372036854775807", "99999999999999999999"}
	fuzzBackoffs = []string{"", "10s", "5m0s", "20s", "-1s", "0", "x", "2562047h47m16.854775807s", "1ns"}
	fuzzGraces   = []string{"30", "0", "", "-5", "x", "9223372036854775807", "9223372036"}
)

func fuzzContainer(r *byteReader, init bool) corev1.Container {
	c := corev1.Container{Name: choose(r, fuzzNames...), Image: choose(r, "img:1", "img:2")}
	switch r.pick(6) {
	case 0:
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	case 1:
		if !init {
			c.RestartPolicy = ptr.To(choose(r, corev1.ContainerRestartPolicyNever, corev1.ContainerRestartPolicyOnFailure))
		}
	}
	if c.RestartPolicy != nil && r.pick(3) == 0 {
		c.RestartPolicyRules = []corev1.ContainerRestartRule{{
			Action: corev1.ContainerRestartRuleActionRestart,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
				Operator: choose(r, corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn, "Bogus"),
				Values:   []int32{int32(r.pick(4))},
			},
		}}
	}
	if r.pick(4) == 0 {
		c.StartupProbe = &corev1.Probe{}
	}
	return c
}

func fuzzPod(r *byteReader) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}}
	pod.Spec.RestartPolicy = choose(r, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, "")
	pod.Spec.HostNetwork = r.bool()
	for i, n := 0, r.pick(4); i < n; i++ {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, fuzzContainer(r, true))
	}
	for i, n := 0, r.pick(4); i < n; i++ {
		pod.Spec.Containers = append(pod.Spec.Containers, fuzzContainer(r, false))
	}
	for i, n := 0, r.pick(3); i < n; i++ {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: choose(r, fuzzNames...), Image: "img:1"},
		})
	}
	for i, n := 0, r.pick(3); i < n; i++ {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: choose(r, fuzzNames...), ContainerID: choose(r, "", "containerd://old"), RestartCount: int32(r.pick(4)),
		})
	}
	return pod
}

// fuzzRuntimeStatus is the runtime's record of the pod, decoded as
// GetPodStatus decodes CRI's answers.
func fuzzRuntimeStatus(r *byteReader, pod *corev1.Pod) *kubecontainer.PodStatus {
	m := &Manager{runtimeName: "containerd"}
	status := &kubecontainer.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	sandboxIDs := []string{"s1", "s2"}
	for i, n := 0, r.pick(3); i < n; i++ {
		sb := &runtimeapi.PodSandboxStatus{
			Id:        choose(r, sandboxIDs...),
			Metadata:  &runtimeapi.PodSandboxMetadata{Attempt: choose(r, uint32(0), 1, 7, ^uint32(0))},
			State:     choose(r, runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
			CreatedAt: int64(r.pick(8)),
			Network:   &runtimeapi.PodSandboxNetworkStatus{Ip: choose(r, "10.0.0.2", "")},
		}
		if r.bool() {
			sb.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
		}
		status.Sandboxes = append(status.Sandboxes, sandboxFromStatus(sb))
	}
	base := testNow.Add(-time.Hour).UnixNano()
	for i, n := 0, r.pick(7); i < n; i++ {
		name := choose(r, fuzzNames...)
		image := choose(r, "img:1", "img:2")
		s := &runtimeapi.ContainerStatus{
			Id:         "c" + strconv.Itoa(i),
			State:      choose(r, runtimeapi.ContainerState_CONTAINER_CREATED, runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED, runtimeapi.ContainerState_CONTAINER_UNKNOWN),
			CreatedAt:  base + int64(r.pick(16))*int64(time.Minute),
			StartedAt:  choose(r, int64(0), base+int64(time.Minute)),
			FinishedAt: choose(r, int64(0), base+int64(2*time.Minute), testNow.UnixNano()-int64(time.Second), base-int64(time.Hour)),
			ExitCode:   int32(choose(r, 0, 1, 2, -1, 137)),
			Labels:     map[string]string{kubecontainer.LabelContainerName: name, kubecontainer.LabelPodUID: string(pod.UID)},
			Annotations: map[string]string{
				AnnotationRestartCount:        choose(r, fuzzCounts...),
				AnnotationRestartBackoff:      choose(r, fuzzBackoffs...),
				AnnotationPodTerminationGrace: choose(r, fuzzGraces...),
			},
		}
		if r.pick(4) != 0 {
			s.Annotations[AnnotationContainerHash] = HashContainer(&corev1.Container{Name: name, Image: image})
		}
		status.Containers = append(status.Containers, m.containerFromStatus(choose(r, sandboxIDs...), s))
	}
	sortNewestFirst(status)
	return status
}

func fuzzProbeResults(r *byteReader, status *kubecontainer.PodStatus) kubecontainer.ProbeResults {
	probes := kubecontainer.ProbeResults{}
	for _, c := range status.Containers {
		if r.bool() {
			results := []kubecontainer.ProbeResult{kubecontainer.ProbeUnknown, kubecontainer.ProbeSuccess, kubecontainer.ProbeFailure}
			probes[c.ID] = kubecontainer.ContainerProbeResults{Liveness: choose(r, results...), Startup: choose(r, results...)}
		}
	}
	return probes
}

func FuzzComputePodActions(f *testing.F) {
	for _, seed := range [][]byte{
		nil,
		[]byte("nodelet pod actions"),
		// Containers, no init containers, one ready sandbox, instances
		// of each.
		{0, 0, 0, 2, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 5, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 2, 1, 0, 6, 1, 0, 0, 0, 1},
		// Init containers, sidecars among them, with exited and running
		// instances.
		{1, 1, 0, 3, 0, 0, 0, 1, 1, 1, 0, 0, 2, 0, 0, 2, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 6, 0, 0, 2, 1, 0, 2, 1, 0, 2, 0, 1, 0, 0, 1, 2, 2, 0, 3, 2, 1, 1, 1, 0, 0},
		// Damaged annotations: huge restart counts and back-offs.
		{2, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 3, 2, 1, 3, 2, 2, 0, 3, 1, 3, 7, 7, 6, 0, 1, 1, 2, 2, 7, 8, 7, 5, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{data: data}
		pod := fuzzPod(r)
		status := fuzzRuntimeStatus(r, pod)
		probes := fuzzProbeResults(r, status)
		podBefore, statusBefore := pod.DeepCopy(), fmt.Sprintf("%+v", derefAll(status))

		got := ComputePodActions(pod, status, probes, testNow)

		if again := ComputePodActions(pod, status, probes, testNow); !cmp.Equal(got, again, cmpopts.EquateEmpty()) {
			t.Errorf("ComputePodActions() is not deterministic:\n%s", cmp.Diff(got, again, cmpopts.EquateEmpty()))
		}
		if !equality.Semantic.DeepEqual(pod, podBefore) {
			t.Errorf("ComputePodActions() changed the pod:\n%s", cmp.Diff(podBefore, pod))
		}
		if after := fmt.Sprintf("%+v", derefAll(status)); after != statusBefore {
			t.Errorf("ComputePodActions() changed the runtime status:\n%s\n%s", statusBefore, after)
		}
		checkPlan(t, pod, status, got)
	})
}

func derefAll(status *kubecontainer.PodStatus) []any {
	var all []any
	for _, sb := range status.Sandboxes {
		all = append(all, *sb)
	}
	for _, c := range status.Containers {
		all = append(all, *c)
	}
	return all
}

// checkPlan holds what SyncPod relies on: indices in range, each container
// started once, non-negative restart counts (the CRI attempt is unsigned),
// back-offs within the maximum, and only the runtime's own containers
// killed.
func checkPlan(t *testing.T, pod *corev1.Pod, status *kubecontainer.PodStatus, got PodActions) {
	t.Helper()
	for _, list := range []struct {
		what  string
		n     int
		start []ContainerToStart
	}{
		{"init container", len(pod.Spec.InitContainers), got.InitContainersToStart},
		{"container", len(pod.Spec.Containers), got.ContainersToStart},
		{"ephemeral container", len(pod.Spec.EphemeralContainers), got.EphemeralContainersToStart},
	} {
		var seen []int
		for _, s := range list.start {
			if s.Index < 0 || s.Index >= list.n {
				t.Errorf("plan starts %s %d of %d: %+v", list.what, s.Index, list.n, got)
				continue
			}
			if slices.Contains(seen, s.Index) {
				t.Errorf("plan starts %s %d twice: %+v", list.what, s.Index, got)
			}
			seen = append(seen, s.Index)
			if s.RestartCount < 0 {
				t.Errorf("plan starts %s %d with restart count %d", list.what, s.Index, s.RestartCount)
			}
			if s.Backoff < 0 || s.Backoff > MaxRestartBackoff {
				t.Errorf("plan starts %s %d with back-off %v, want within [0, %v]", list.what, s.Index, s.Backoff, MaxRestartBackoff)
			}
		}
	}
	for _, b := range got.ContainersInBackOff {
		if b.Delay < 0 || b.Delay > MaxRestartBackoff {
			t.Errorf("container %q waits a back-off of %v, want within [0, %v]", b.Name, b.Delay, MaxRestartBackoff)
		}
		if !b.Until.After(testNow) {
			t.Errorf("container %q waits for back-off until %v, not after now %v", b.Name, b.Until, testNow)
		}
	}
	for id := range got.ContainersToKill {
		if !slices.ContainsFunc(status.Containers, func(c *kubecontainer.ContainerStatus) bool { return c.ID == id }) {
			t.Errorf("plan kills container %v the runtime does not have", id)
		}
	}
	starts := len(got.InitContainersToStart) + len(got.ContainersToStart)
	if starts > 0 && !got.CreateSandbox && status.SandboxByID(got.SandboxID) == nil {
		t.Errorf("plan starts containers in sandbox %q, neither created nor kept: %+v", got.SandboxID, got)
	}
	if got.CreateSandbox && got.SandboxID != "" {
		t.Errorf("plan both creates a sandbox and keeps %q", got.SandboxID)
	}
	if got.KillPod && !got.CreateSandbox && starts > 0 {
		t.Errorf("plan kills the pod for good yet starts containers: %+v", got)
	}
}
