package runtime

// What the pure tests of ComputePodActions share: one base pod and its
// runtime state, instances of its containers, and the runner of a table
// of cases.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{
				{Name: "app", Image: "busybox:1"},
				{Name: "sidecar", Image: "busybox:1"},
			},
		},
	}
}

func running(name, sandboxID string, restartCount int, pod *corev1.Pod) *kubecontainer.ContainerStatus {
	return &kubecontainer.ContainerStatus{
		ID:           kubecontainer.ContainerID{Type: "containerd", ID: name + "-" + string(rune('0'+restartCount))},
		Name:         name,
		SandboxID:    sandboxID,
		State:        kubecontainer.ContainerRunning,
		CreatedAt:    testNow.Add(-time.Hour),
		StartedAt:    testNow.Add(-time.Hour),
		Hash:         HashContainer(podutil.ContainerByName(pod, name)),
		RestartCount: restartCount,
	}
}

// exited makes c a container that ran for two seconds and finished
// finishedAgo before testNow.
func exited(c *kubecontainer.ContainerStatus, exitCode int32, finishedAgo time.Duration) *kubecontainer.ContainerStatus {
	c.State = kubecontainer.ContainerExited
	c.ExitCode = exitCode
	c.FinishedAt = testNow.Add(-finishedAgo)
	c.StartedAt = c.FinishedAt.Add(-2 * time.Second)
	return c
}

// sidecarSpec is an init container that restarts always: a sidecar.
func sidecarSpec(name string) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	return corev1.Container{Name: name, Image: "busybox:1", RestartPolicy: &always}
}

// baseStatus is the runtime's record of basePod running happily.
func baseStatus(pod *corev1.Pod) *kubecontainer.PodStatus {
	return &kubecontainer.PodStatus{
		UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
		Sandboxes: []*kubecontainer.SandboxStatus{{ID: "sb1", State: kubecontainer.SandboxReady, IPs: []string{"10.0.0.5"}, CreatedAt: testNow.Add(-time.Hour)}},
		Containers: []*kubecontainer.ContainerStatus{
			running("app", "sb1", 0, pod),
			running("sidecar", "sb1", 0, pod),
		},
	}
}

func noKills() map[kubecontainer.ContainerID]ContainerToKill {
	return map[kubecontainer.ContainerID]ContainerToKill{}
}

// podActionsCase mutates basePod and its runtime state, and names the
// whole plan ComputePodActions must make of them.
type podActionsCase struct {
	mutatePod    func(*corev1.Pod)
	mutateStatus func(*corev1.Pod, *kubecontainer.PodStatus)
	probes       kubecontainer.ProbeResults
	want         PodActions
}

func runPodActionsCases(t *testing.T, cases map[string]podActionsCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := basePod()
			if tc.mutatePod != nil {
				tc.mutatePod(pod)
			}
			status := baseStatus(basePod())
			if tc.mutateStatus != nil {
				tc.mutateStatus(pod, status)
			}
			got := ComputePodActions(pod, status, tc.probes, testNow)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ComputePodActions() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
