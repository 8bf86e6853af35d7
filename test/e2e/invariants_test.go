package e2e

// The status invariants, checked on every status update a watch sees of a
// batch of pods created and deleted at random moments: while their images
// are pulled, while init containers run, while they run or crash, while
// they finish.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// invariantPods are the kinds of pods the batch is made of.
var invariantPods = []func(b *podBuilder) *podBuilder{
	// Pulled every time, then sleeps.
	func(b *podBuilder) *podBuilder {
		return b.with(func(p *corev1.Pod) { p.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways })
	},
	// An init container first.
	func(b *podBuilder) *podBuilder { return b.withInitContainer("init", "sleep 1") },
	// Two init containers, then an app that succeeds, under Never.
	func(b *podBuilder) *podBuilder {
		return b.withInitContainer("init1", "true").withInitContainer("init2", "sleep 0.5").
			withShell("sleep 1").withRestartPolicy(corev1.RestartPolicyNever)
	},
	// Crash-looping.
	func(b *podBuilder) *podBuilder { return b.withShell("sleep 0.5; exit 1") },
	// Fails under OnFailure, then again.
	func(b *podBuilder) *podBuilder {
		return b.withShell("exit 2").withRestartPolicy(corev1.RestartPolicyOnFailure)
	},
	// A sidecar and an app that finishes under Never.
	func(b *podBuilder) *podBuilder {
		return b.withSidecar("proxy", "exec sleep 3600").withShell("sleep 1.5").withRestartPolicy(corev1.RestartPolicyNever)
	},
	// An init container that fails, retried.
	func(b *podBuilder) *podBuilder {
		return b.withInitContainer("init", "exit 1").withRestartPolicy(corev1.RestartPolicyOnFailure)
	},
	// A readiness probe that passes after a while.
	func(b *podBuilder) *podBuilder {
		return b.withShell("sleep 1; touch /tmp/ready; exec sleep 3600").with(func(p *corev1.Pod) {
			p.Spec.Containers[0].ReadinessProbe = execProbe("cat", "/tmp/ready")
		})
	},
}

// TestStatusInvariantsHoldForPodsDeletedAtRandomMoments does not call
// t.Parallel: its burst of pods runs alone, before the parallel tests,
// rather than slowing down those that time their pods (see main_test.go).
func TestStatusInvariantsHoldForPodsDeletedAtRandomMoments(t *testing.T) {
	ns := f.NewNamespace(t)
	seed := time.Now().UnixNano()
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	list, err := f.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recorder := newStatusRecorder()
	watchCtx, stopWatch := context.WithTimeout(t.Context(), 5*time.Minute)
	defer stopWatch()
	watched := make(chan error, 1)
	go func() { watched <- recorder.watch(watchCtx, ns, list.ResourceVersion) }()

	const count = 16
	type plan struct {
		name  string
		after time.Duration
		grace int64
	}
	var plans []plan
	for i := range count {
		plans = append(plans, plan{
			name:  fmt.Sprintf("pod-%02d", i),
			after: time.Duration(rng.IntN(6000)) * time.Millisecond,
			grace: 1 + rng.Int64N(3),
		})
	}
	var wg sync.WaitGroup
	uids := make([]types.UID, count)
	for i, p := range plans {
		pod := invariantPods[i%len(invariantPods)](newPod(ns, p.name)).obj()
		// Creations are spread over two seconds.
		start := time.Duration(rng.IntN(2000)) * time.Millisecond
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The random moments are the scenario itself, not waits.
			time.Sleep(start)
			created, err := f.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
			if err != nil {
				t.Errorf("creating pod %s: %v", pod.Name, err)
				return
			}
			uids[i] = created.UID
			time.Sleep(p.after)
			err = f.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To(p.grace),
				Preconditions:      &metav1.Preconditions{UID: &created.UID},
			})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting pod %s: %v", pod.Name, err)
			}
		}()
	}
	wg.Wait()

	await.Eventually(t, 3*time.Minute, "every pod of the batch to leave the API", await.Condition(func(ctx context.Context) (bool, error) {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	}))
	await.Eventually(t, time.Minute, "the watch to see every pod go", await.Condition(func(context.Context) (bool, error) {
		return recorder.deletedAll(uids), nil
	}))
	stopWatch()
	if err := <-watched; err != nil && watchCtx.Err() == nil {
		t.Fatalf("watching the batch: %v", err)
	}

	updates := 0
	for _, uid := range uids {
		history := recorder.history(uid)
		updates += len(history)
		for _, violation := range statusViolations(history) {
			t.Errorf("pod %s: %s", podName(history), violation)
		}
	}
	t.Logf("checked %d states of %d pods", updates, count)
	if updates < 2*count {
		t.Errorf("saw only %d states of %d pods: the watch missed the batch", updates, count)
	}
}

// statusRecorder keeps every state a watch sees of each pod.
type statusRecorder struct {
	mu      sync.Mutex
	states  map[types.UID][]*corev1.Pod
	deleted map[types.UID]bool
}

func newStatusRecorder() *statusRecorder {
	return &statusRecorder{states: map[types.UID][]*corev1.Pod{}, deleted: map[types.UID]bool{}}
}

func (r *statusRecorder) watch(ctx context.Context, ns, resourceVersion string) error {
	return WatchPods(ctx, f.Client, ns, resourceVersion, func(change watch.EventType, pod *corev1.Pod) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.states[pod.UID] = append(r.states[pod.UID], pod)
		if change == watch.Deleted {
			r.deleted[pod.UID] = true
		}
	})
}

func (r *statusRecorder) deletedAll(uids []types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, uid := range uids {
		if uid != "" && !r.deleted[uid] {
			return false
		}
	}
	return true
}

func (r *statusRecorder) history(uid types.UID) []*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*corev1.Pod(nil), r.states[uid]...)
}

func podName(history []*corev1.Pod) string {
	if len(history) == 0 {
		return "<never seen>"
	}
	return history[0].Name
}

// statusViolations checks one pod's states, in the order a watch saw them:
//   - a terminal phase never goes back;
//   - a terminated container instance never runs or waits again: later it
//     is still shown terminated, as the state or as the last state, or a
//     newer instance is;
//   - restart counts never decrease;
//   - no container state has finishedAt without startedAt;
//   - no app container has started while an init container has not
//     succeeded, nor before one finished.
func statusViolations(history []*corev1.Pod) []string {
	var out []string
	var terminalPhase corev1.PodPhase
	restarts := map[string]int32{}
	terminated := map[string]map[string]bool{} // container name → instance IDs seen terminated
	for i, pod := range history {
		at := fmt.Sprintf("state %d (%s)", i, describePod(pod))
		s := pod.Status
		if terminalPhase != "" && s.Phase != terminalPhase {
			out = append(out, fmt.Sprintf("%s: phase %s after %s", at, s.Phase, terminalPhase))
		}
		if s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed {
			terminalPhase = s.Phase
		}
		all := append(append(append([]corev1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...), s.EphemeralContainerStatuses...)
		for _, cs := range all {
			if cs.RestartCount < restarts[cs.Name] {
				out = append(out, fmt.Sprintf("%s: %s restartCount %d after %d", at, cs.Name, cs.RestartCount, restarts[cs.Name]))
			}
			restarts[cs.Name] = max(restarts[cs.Name], cs.RestartCount)

			for _, st := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if st != nil && !st.FinishedAt.IsZero() && st.StartedAt.IsZero() {
					out = append(out, fmt.Sprintf("%s: %s has finishedAt %s without startedAt", at, cs.Name, st.FinishedAt))
				}
			}

			for id := range terminated[cs.Name] {
				if cs.ContainerID != id {
					continue
				}
				shown := cs.State.Terminated != nil ||
					(cs.LastTerminationState.Terminated != nil && terminatedID(&cs, cs.LastTerminationState.Terminated) == id)
				if cs.State.Running != nil || !shown {
					out = append(out, fmt.Sprintf("%s: %s instance %s was terminated and is now %s", at, cs.Name, id, describeState(cs.State)))
				}
			}
			if t := cs.State.Terminated; t != nil {
				if id := terminatedID(&cs, t); id != "" {
					if terminated[cs.Name] == nil {
						terminated[cs.Name] = map[string]bool{}
					}
					terminated[cs.Name][id] = true
				}
			}
		}
		out = append(out, initOrderViolations(pod, at)...)
	}
	return out
}

// terminatedID is the instance a terminated state is of.
func terminatedID(cs *corev1.ContainerStatus, t *corev1.ContainerStateTerminated) string {
	if t.ContainerID != "" {
		return t.ContainerID
	}
	if cs.State.Terminated == t {
		return cs.ContainerID
	}
	return ""
}

// initOrderViolations checks one state: an app container that runs or ran
// (with a start time) needs every init container but sidecars succeeded,
// and finished no later than it started.
func initOrderViolations(pod *corev1.Pod, at string) []string {
	var out []string
	for _, cs := range pod.Status.ContainerStatuses {
		var started metav1.Time
		switch {
		case cs.State.Running != nil:
			started = cs.State.Running.StartedAt
		case cs.State.Terminated != nil && cs.State.Terminated.ContainerID != "":
			started = cs.State.Terminated.StartedAt
		default:
			continue
		}
		for i := range pod.Spec.InitContainers {
			init := &pod.Spec.InitContainers[i]
			if init.RestartPolicy != nil && *init.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				continue
			}
			is := containerStatus(pod, init.Name)
			if is == nil || is.State.Terminated == nil || is.State.Terminated.ExitCode != 0 {
				out = append(out, fmt.Sprintf("%s: %s started while init container %s had not succeeded", at, cs.Name, init.Name))
				continue
			}
			if finished := is.State.Terminated.FinishedAt; !finished.IsZero() && !started.IsZero() && started.Before(&finished) {
				out = append(out, fmt.Sprintf("%s: %s started at %s, before init container %s finished at %s", at, cs.Name, started, init.Name, finished))
			}
		}
	}
	return out
}
