package podstatus

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

var lifecycleNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func TestDeadlineFailure(t *testing.T) {
	start := metav1.NewTime(lifecycleNow.Add(-time.Minute))
	cases := map[string]struct {
		deadline  *int64
		startTime *metav1.Time
		want      *Failure
		wantAt    time.Time
		// wantCheck is DeadlineCheck's answer when it is not wantAt.
		wantCheck time.Time
	}{
		"no deadline":         {startTime: &start},
		"not started yet":     {deadline: ptr.To[int64](10), wantCheck: lifecycleNow.Add(10 * time.Second)},
		"before the deadline": {deadline: ptr.To[int64](61), startTime: &start, wantAt: lifecycleNow.Add(time.Second)},
		"at the deadline": {deadline: ptr.To[int64](60), startTime: &start, wantAt: lifecycleNow,
			want: &Failure{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.deadline}, Status: corev1.PodStatus{StartTime: tc.startTime}}
			if got := DeadlineFailure(pod, lifecycleNow); (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("DeadlineFailure() = %+v, want %+v", got, tc.want)
			}
			if got := ActiveDeadline(pod); !got.Equal(tc.wantAt) {
				t.Errorf("ActiveDeadline() = %v, want %v", got, tc.wantAt)
			}
			wantCheck := tc.wantCheck
			if wantCheck.IsZero() {
				wantCheck = tc.wantAt
			}
			if got := DeadlineCheck(pod, lifecycleNow); !got.Equal(wantCheck) {
				t.Errorf("DeadlineCheck() = %v, want %v", got, wantCheck)
			}
		})
	}
}

func TestGeneratePodStatusFailsThePodOnceItsContainersStopped(t *testing.T) {
	failure := &Failure{Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	app := &kubecontainer.ContainerStatus{
		ID: kubecontainer.ContainerID{Type: "containerd", ID: "c1"}, Name: "app", SandboxID: "sb1",
		State: kubecontainer.ContainerRunning, StartedAt: lifecycleNow.Add(-time.Minute),
	}
	rt := &kubecontainer.PodStatus{
		Sandboxes:  []*kubecontainer.SandboxStatus{{ID: "sb1", State: kubecontainer.SandboxNotReady}},
		Containers: []*kubecontainer.ContainerStatus{app},
	}

	// Still running: not failed yet.
	s := Generate(Input{Pod: pod, Runtime: rt, Terminal: true, Failure: failure, Now: lifecycleNow})
	if s.Phase != corev1.PodRunning || s.Reason != "" {
		t.Errorf("with the container running: phase %s reason %q, want Running and no reason", s.Phase, s.Reason)
	}

	app.State, app.ExitCode, app.FinishedAt = kubecontainer.ContainerExited, 137, lifecycleNow
	s = Generate(Input{Pod: pod, Runtime: rt, Terminal: true, Failure: failure, Now: lifecycleNow})
	if s.Phase != corev1.PodFailed || s.Reason != failure.Reason || s.Message != failure.Message {
		t.Errorf("with the container stopped: phase %s reason %q message %q, want Failed with the failure's", s.Phase, s.Reason, s.Message)
	}
	if c := findCondition(s.Conditions, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "PodFailed" {
		t.Errorf("Ready condition = %+v, want False with PodFailed", c)
	}
}
