package prober

// The probe worker's decisions, one doProbe at a time, against a fake
// clock and a fake command runner (exec probes): initial results, initial
// delay, thresholds, the startup probe gating the others, holding after a
// verdict, and the state of containers that ran before nodelet started.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// scriptedRunner answers exec probes: each call takes the next error of
// errs (nil once they run out) and counts itself.
type scriptedRunner struct {
	mu    sync.Mutex
	errs  []error
	calls int
}

func (r *scriptedRunner) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if len(r.errs) == 0 {
		return []byte("ok"), nil, nil
	}
	err := r.errs[0]
	r.errs = r.errs[1:]
	return []byte("not yet"), nil, err
}

func (r *scriptedRunner) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

var exitOne = utilexec.CodeExitError{Err: errors.New("command 'cat' exited with 1"), Code: 1}

type workerEnv struct {
	m        *Manager
	clock    *testingclock.FakeClock
	runner   *scriptedRunner
	recorder *record.FakeRecorder
	changes  *int
}

func newWorkerEnv(t *testing.T) *workerEnv {
	t.Helper()
	clk := testingclock.NewFakeClock(testNow)
	runner := &scriptedRunner{}
	recorder := record.NewFakeRecorder(100)
	changes := 0
	var mu sync.Mutex
	m := NewManager(Options{Runner: runner, Recorder: recorder, Clock: clk, OnChange: func(context.Context, string, string, types.UID) {
		mu.Lock()
		defer mu.Unlock()
		changes++
	}})
	t.Cleanup(m.Stop)
	return &workerEnv{m: m, clock: clk, runner: runner, recorder: recorder, changes: &changes}
}

func probedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Containers:    []corev1.Container{{Name: "app", Image: "busybox"}},
		},
	}
}

func exec() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/ready"}}}}
}

// runningStatus is a status with app running since startedAgo, started or
// not, as instance id.
func runningStatus(id string, startedAgo time.Duration, started bool) *corev1.PodStatus {
	return &corev1.PodStatus{
		Phase: corev1.PodRunning,
		PodIP: "10.0.0.5",
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:        "app",
			ContainerID: "containerd://" + id,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(testNow.Add(-startedAgo))}},
			Started:     ptr.To(started),
		}},
	}
}

// worker makes a worker for the pod's app container and hands the manager
// the pod and status, as UpdatePod would, without starting the worker.
func (e *workerEnv) worker(pod *corev1.Pod, t probeType, status *corev1.PodStatus) *worker {
	e.setStatus(pod, status)
	c := &pod.Spec.Containers[0]
	return newWorker(e.m, pod, c, false, t, probeOf(c, t))
}

func (e *workerEnv) setStatus(pod *corev1.Pod, status *corev1.PodStatus) {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	e.m.pods[pod.UID] = &podEntry{pod: pod, status: status}
}

func (e *workerEnv) result(id string) kubecontainer.ContainerProbeResults {
	return e.m.Results("uid-1")[kubecontainer.ContainerID{Type: "containerd", ID: id}]
}

func TestWorkerSetsTheKubeletsInitialResults(t *testing.T) {
	cases := map[probeType]kubecontainer.ContainerProbeResults{
		readiness: {Readiness: kubecontainer.ProbeFailure},
		liveness:  {Liveness: kubecontainer.ProbeSuccess},
		startup:   {},
	}
	for pt, want := range cases {
		t.Run(pt.String(), func(t *testing.T) {
			e := newWorkerEnv(t)
			pod := probedPod()
			spec := exec()
			spec.InitialDelaySeconds = 10
			pod.Spec.Containers[0].ReadinessProbe, pod.Spec.Containers[0].LivenessProbe, pod.Spec.Containers[0].StartupProbe = spec, spec, spec
			w := e.worker(pod, pt, runningStatus("c1", time.Second, pt != startup))
			if !w.doProbe(context.Background()) {
				t.Fatal("doProbe() = false, want the worker to go on")
			}
			if got := e.result("c1"); got != want {
				t.Errorf("result before the initial delay = %+v, want %+v", got, want)
			}
			if e.runner.count() != 0 {
				t.Errorf("the probe ran %d times within its initial delay", e.runner.count())
			}
		})
	}
}

func TestWorkerAppliesThresholds(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	spec := exec()
	spec.SuccessThreshold, spec.FailureThreshold = 2, 3
	pod.Spec.Containers[0].ReadinessProbe = spec
	w := e.worker(pod, readiness, runningStatus("c1", time.Second, true))

	steps := []struct {
		err  error
		want kubecontainer.ProbeResult
	}{
		{nil, kubecontainer.ProbeFailure}, // one success is not enough
		{nil, kubecontainer.ProbeSuccess},
		{exitOne, kubecontainer.ProbeSuccess},
		{exitOne, kubecontainer.ProbeSuccess},
		{exitOne, kubecontainer.ProbeFailure}, // the third failure in a row
		{nil, kubecontainer.ProbeFailure},
		{exitOne, kubecontainer.ProbeFailure},
		{nil, kubecontainer.ProbeFailure},
		{nil, kubecontainer.ProbeSuccess},
	}
	for i, step := range steps {
		e.runner.errs = []error{step.err}
		if step.err == nil {
			e.runner.errs = nil
		}
		w.doProbe(context.Background())
		if got := e.result("c1").Readiness; got != step.want {
			t.Fatalf("after probe %d: readiness %s, want %s", i+1, got, step.want)
		}
	}
}

func TestWorkerRunsTheStartupProbeAloneUntilTheContainerStarted(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	pod.Spec.Containers[0].StartupProbe = exec()
	pod.Spec.Containers[0].LivenessProbe = exec()
	notStarted := runningStatus("c1", time.Second, false)
	live := e.worker(pod, liveness, notStarted)
	start := e.worker(pod, startup, notStarted)

	live.doProbe(context.Background())
	if e.runner.count() != 0 {
		t.Fatalf("the liveness probe ran before the container started")
	}
	start.doProbe(context.Background())
	if e.runner.count() != 1 || e.result("c1").Startup != kubecontainer.ProbeSuccess {
		t.Fatalf("startup probe: %d runs, result %s; want one run and Success", e.runner.count(), e.result("c1").Startup)
	}
	// Its verdict is final for this instance.
	start.doProbe(context.Background())
	if e.runner.count() != 1 {
		t.Errorf("the startup probe ran again after it passed")
	}

	e.setStatus(pod, runningStatus("c1", time.Second, true))
	live.doProbe(context.Background())
	start.doProbe(context.Background())
	if e.runner.count() != 2 {
		t.Errorf("after the container started: %d probe runs, want the liveness probe's only", e.runner.count())
	}
}

func TestWorkerWaitsForANewInstanceAfterALivenessFailure(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	pod.Spec.Containers[0].LivenessProbe = exec()
	pod.Spec.Containers[0].LivenessProbe.FailureThreshold = 1
	w := e.worker(pod, liveness, runningStatus("c1", time.Second, true))

	e.runner.errs = []error{exitOne}
	w.doProbe(context.Background())
	if got := e.result("c1").Liveness; got != kubecontainer.ProbeFailure {
		t.Fatalf("liveness = %s after a failure with threshold 1, want Failure", got)
	}
	if event := <-e.recorder.Events; event != "Warning Unhealthy Liveness probe failed: not yet" {
		t.Errorf("event = %q, want the kubelet's Unhealthy event", event)
	}
	w.doProbe(context.Background())
	if e.runner.count() != 1 {
		t.Errorf("the probe ran again on the instance being restarted")
	}

	// The restarted instance starts over from the initial result.
	e.setStatus(pod, runningStatus("c2", 0, true))
	w.doProbe(context.Background())
	if e.runner.count() != 2 {
		t.Errorf("the probe did not run on the new instance")
	}
	if old, now := e.result("c1"), e.result("c2"); old != (kubecontainer.ContainerProbeResults{}) || now.Liveness != kubecontainer.ProbeSuccess {
		t.Errorf("results: old instance %+v, new %+v; want the old one gone and the new one Success", old, now)
	}
}

func TestWorkerOnAContainerThatIsNotRunning(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Containers[0].ReadinessProbe = exec()
	status := runningStatus("c1", time.Second, true)
	w := e.worker(pod, readiness, status)
	w.doProbe(context.Background())

	status = status.DeepCopy()
	status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	e.setStatus(pod, status)
	if w.doProbe(context.Background()) {
		t.Error("doProbe() = true for a container that exited for good, want the worker to end")
	}
	if got := e.result("c1").Readiness; got != kubecontainer.ProbeFailure {
		t.Errorf("readiness = %s, want Failure", got)
	}
}

func TestWorkerOfAPodBeingDeletedLeavesItHealthy(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	pod.Spec.Containers[0].LivenessProbe = exec()
	w := e.worker(pod, liveness, runningStatus("c1", time.Minute, true))
	e.runner.errs = []error{exitOne}
	if w.doProbe(context.Background()) {
		t.Error("doProbe() = true, want the liveness worker of a pod being deleted to end")
	}
	if e.runner.count() != 0 || e.result("c1").Liveness != kubecontainer.ProbeSuccess {
		t.Errorf("%d probe runs, liveness %s; want none and Success", e.runner.count(), e.result("c1").Liveness)
	}
}

func TestWorkerKeepsTheStateOfContainersThatRanBeforeNodelet(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	pod.Spec.Containers[0].ReadinessProbe = exec()
	w := e.worker(pod, readiness, runningStatus("c1", time.Hour, true))
	// The prober started now; the container an hour ago.
	// A probe that cannot run at all gives no verdict.
	broken := errors.New("the runtime is not answering")
	e.runner.errs = []error{broken, broken, broken}
	w.doProbe(context.Background())
	if got := e.result("c1"); got != (kubecontainer.ContainerProbeResults{}) {
		t.Errorf("result = %+v, want none: no initial failure for a container nodelet found running", got)
	}
	if event := <-e.recorder.Events; event != "Warning Unhealthy Readiness probe errored and resulted in unknown state: the runtime is not answering" {
		t.Errorf("event = %q, want the kubelet's", event)
	}
}

func TestWorkerEndsWithThePod(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	pod.Spec.Containers[0].ReadinessProbe = exec()
	status := runningStatus("c1", time.Second, true)
	status.Phase = corev1.PodSucceeded
	if e.worker(pod, readiness, status).doProbe(context.Background()) {
		t.Error("doProbe() = true for a pod that is done")
	}
}

// Each probe that gave a result is counted in the kubelet's
// prober_probe_total by result (not by the threshold's verdict), and the
// worker's series go when it stops.
func TestWorkerCountsEachProbeResultInTheKubeletsMetric(t *testing.T) {
	e := newWorkerEnv(t)
	pod := probedPod()
	pod.UID = "uid-metrics"
	spec := exec()
	spec.FailureThreshold = 3
	pod.Spec.Containers[0].ReadinessProbe = spec
	w := e.worker(pod, readiness, runningStatus("c1", time.Second, true))
	counted := func(result string) float64 {
		return testutil.ToFloat64(kubeletmetrics.ProberResults.WithLabelValues("Readiness", result, "app", "web", "default", "uid-metrics"))
	}

	e.runner.errs = []error{exitOne, exitOne}
	for range 3 {
		w.doProbe(context.Background())
	}
	if got := counted("failed"); got != 2 {
		t.Errorf("failed probes counted = %v, want 2", got)
	}
	if got := counted("successful"); got != 1 {
		t.Errorf("successful probes counted = %v, want 1", got)
	}

	w.deleteMetrics()
	for _, result := range []string{"successful", "failed", "unknown"} {
		if kubeletmetrics.ProberResults.DeleteLabelValues("Readiness", result, "app", "web", "default", "uid-metrics") {
			t.Errorf("the %s series is left after the worker stopped", result)
		}
	}
}
