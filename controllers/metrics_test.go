package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestPodWorkerOperation(t *testing.T) {
	withSandbox := &kubecontainer.PodStatus{Sandboxes: []*kubecontainer.SandboxStatus{{State: kubecontainer.SandboxReady}}}
	cases := map[string]struct {
		pod    *corev1.Pod
		status *kubecontainer.PodStatus
		want   string
	}{
		"a new pod is created": {
			pod: &corev1.Pod{}, status: &kubecontainer.PodStatus{}, want: "create",
		},
		"a pod with its sandbox is synced": {
			pod: &corev1.Pod{}, status: withSandbox, want: "sync",
		},
		"a pod being deleted is killed": {
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}}, status: withSandbox, want: "kill",
		},
		"a finished pod is terminated": {
			pod: &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, status: withSandbox, want: "terminated",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podWorkerOperation(tc.pod, tc.status); got != tc.want {
				t.Errorf("podWorkerOperation() = %q, want %q", got, tc.want)
			}
		})
	}
}
