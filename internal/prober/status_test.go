package prober

// Pure tests of StartedAndReady, and the Manager's bookkeeping with real
// workers (a fake clock the test steps through a probe period, a fake
// command runner).

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestStartedAndReady(t *testing.T) {
	proberStarted := testNow
	id := kubecontainer.ContainerID{Type: "containerd", ID: "c1"}
	runningSince := func(ago time.Duration) *kubecontainer.PodStatus {
		return &kubecontainer.PodStatus{Containers: []*kubecontainer.ContainerStatus{{
			ID: id, Name: "app", State: kubecontainer.ContainerRunning, StartedAt: testNow.Add(-ago),
		}}}
	}
	withProbes := func(p *corev1.Pod) {
		p.Spec.Containers[0].StartupProbe = exec()
		p.Spec.Containers[0].ReadinessProbe = exec()
	}
	wasReadyAndStarted := func(p *corev1.Pod) {
		withProbes(p)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: id.String(), Started: ptr.To(true), Ready: true}}
	}
	cases := map[string]struct {
		mutatePod   func(*corev1.Pod)
		rt          *kubecontainer.PodStatus
		results     kubecontainer.ProbeResults
		wantStarted map[string]bool
		wantReady   map[string]bool
	}{
		"a container without probes is left to the defaults": {
			rt:          runningSince(time.Second),
			wantStarted: map[string]bool{}, wantReady: map[string]bool{},
		},
		"probes that have not reported: not started, not ready": {
			mutatePod:   withProbes,
			rt:          runningSince(time.Second),
			wantStarted: map[string]bool{"app": false}, wantReady: map[string]bool{"app": false},
		},
		"probes that passed": {
			mutatePod:   withProbes,
			rt:          runningSince(time.Second),
			results:     kubecontainer.ProbeResults{id: {Startup: kubecontainer.ProbeSuccess, Readiness: kubecontainer.ProbeSuccess}},
			wantStarted: map[string]bool{"app": true}, wantReady: map[string]bool{"app": true},
		},
		"results of another instance do not count": {
			mutatePod:   withProbes,
			rt:          runningSince(time.Second),
			results:     kubecontainer.ProbeResults{{Type: "containerd", ID: "old"}: {Startup: kubecontainer.ProbeSuccess, Readiness: kubecontainer.ProbeSuccess}},
			wantStarted: map[string]bool{"app": false}, wantReady: map[string]bool{"app": false},
		},
		"a container running since before nodelet keeps its state until probed": {
			mutatePod:   wasReadyAndStarted,
			rt:          runningSince(time.Hour),
			wantStarted: map[string]bool{"app": true}, wantReady: map[string]bool{"app": true},
		},
		"a result overrides the state it kept": {
			mutatePod:   wasReadyAndStarted,
			rt:          runningSince(time.Hour),
			results:     kubecontainer.ProbeResults{id: {Readiness: kubecontainer.ProbeFailure}},
			wantStarted: map[string]bool{"app": true}, wantReady: map[string]bool{"app": false},
		},
		"a container started since nodelet did keeps nothing": {
			mutatePod:   wasReadyAndStarted,
			rt:          runningSince(time.Second),
			wantStarted: map[string]bool{"app": false}, wantReady: map[string]bool{"app": false},
		},
		"a sidecar's probes count like a container's": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), ReadinessProbe: exec()}}
			},
			rt: &kubecontainer.PodStatus{Containers: []*kubecontainer.ContainerStatus{
				{ID: kubecontainer.ContainerID{Type: "containerd", ID: "p1"}, Name: "proxy", State: kubecontainer.ContainerRunning, StartedAt: testNow},
			}},
			results:     kubecontainer.ProbeResults{{Type: "containerd", ID: "p1"}: {Readiness: kubecontainer.ProbeSuccess}},
			wantStarted: map[string]bool{}, wantReady: map[string]bool{"proxy": true},
		},
		"a container that is not running is left to status generation": {
			mutatePod:   withProbes,
			rt:          &kubecontainer.PodStatus{Containers: []*kubecontainer.ContainerStatus{{ID: id, Name: "app", State: kubecontainer.ContainerExited}}},
			results:     kubecontainer.ProbeResults{id: {Readiness: kubecontainer.ProbeSuccess}},
			wantStarted: map[string]bool{}, wantReady: map[string]bool{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := probedPod()
			if tc.mutatePod != nil {
				tc.mutatePod(pod)
			}
			started, ready := StartedAndReady(pod, tc.rt, tc.results, proberStarted)
			if diff := cmp.Diff(tc.wantStarted, started); diff != "" {
				t.Errorf("started mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReady, ready); diff != "" {
				t.Errorf("ready mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestManagerRunsWorkersUntilThePodIsRemoved(t *testing.T) {
	var mu sync.Mutex
	changed := 0
	runner := &scriptedRunner{}
	clk := testingclock.NewFakeClock(testNow)
	m := NewManager(Options{Runner: runner, Clock: clk, OnChange: func(_ context.Context, ns, name string, uid types.UID) {
		mu.Lock()
		defer mu.Unlock()
		if ns == "default" && name == "web" && uid == "uid-1" {
			changed++
		}
	}})
	defer m.Stop()
	pod := probedPod()
	pod.Spec.Containers[0].ReadinessProbe = exec()
	pod.Spec.Containers[0].ReadinessProbe.PeriodSeconds = 1
	id := kubecontainer.ContainerID{Type: "containerd", ID: "c1"}

	// Before the container exists, the worker waits.
	m.UpdatePod(pod, &corev1.PodStatus{Phase: corev1.PodPending})
	status := runningStatus("c1", 0, true)
	m.UpdatePod(pod, status)
	// Right after the manager started, the first probe comes at a random
	// point of the first period.
	await.Eventually(t, 10*time.Second, "the worker to wait for its first probe", await.Condition(func(context.Context) (bool, error) {
		return clk.HasWaiters(), nil
	}))
	clk.Step(time.Second)
	await.Eventually(t, 10*time.Second, "readiness Success a period after the container ran", func(context.Context) error {
		if got := m.Results(pod.UID)[id].Readiness; got != kubecontainer.ProbeSuccess {
			return fmt.Errorf("readiness is %s", got)
		}
		return nil
	})
	mu.Lock()
	if changed == 0 {
		t.Error("OnChange was not called for the pod")
	}
	mu.Unlock()

	m.RemovePod(pod.UID)
	if got := m.Results(pod.UID); len(got) != 0 {
		t.Errorf("results after RemovePod = %v, want none", got)
	}
	await.Eventually(t, 10*time.Second, "the workers to end after RemovePod", func(context.Context) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if n := len(m.workers); n != 0 {
			return fmt.Errorf("%d workers left", n)
		}
		return nil
	})
	// A late result of a removed pod does not bring it back.
	m.set(pod, id, readiness, kubecontainer.ProbeSuccess)
	if got := m.Results(pod.UID); len(got) != 0 {
		t.Errorf("results after a late set = %v, want none", got)
	}
}

func TestManagerCleanupPodsKeepsOnlyThoseGiven(t *testing.T) {
	m := NewManager(Options{Runner: &scriptedRunner{}})
	defer m.Stop()
	keep, gone := probedPod(), probedPod()
	gone.UID = "uid-2"
	for _, p := range []*corev1.Pod{keep, gone} {
		p.Spec.Containers[0].ReadinessProbe = exec()
		m.UpdatePod(p, &corev1.PodStatus{Phase: corev1.PodPending})
	}
	m.CleanupPods(map[types.UID]bool{keep.UID: true})
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[keep.UID]; !ok {
		t.Error("the pod to keep was removed")
	}
	if _, ok := m.pods[gone.UID]; ok {
		t.Error("the pod that is gone was kept")
	}
}
