package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// runner runs the workloads on every agent, alternating which goes first so
// that drift (the machine's load, caches, etcd's size) hits both alike.
type runner struct {
	client   kubernetes.Interface
	ns       string
	settings Settings
	tracker  *tracker
	agents   []*agent
	results  *Results
	// windows are counted in the audit log once everything ran.
	windows    []*auditWindow
	podTimeout time.Duration
	// floors are the agents' runtimes, for the floor runs taken between
	// the single-pod runs and the bursts.
	floors map[string]*criClient
	// floorMains are each agent's floor containers by workload.
	floorMains map[string]map[string]floorContainer
	// burstFloor is nil when no burst floor is taken.
	burstFloor *burstFloorPlan
}

// inTurn returns the agents in the order of run i: as given on even runs,
// reversed on odd ones.
func inTurn(agents []*agent, i int) []*agent {
	if i%2 == 0 {
		return agents
	}
	reversed := make([]*agent, len(agents))
	for j, a := range agents {
		reversed[len(agents)-1-j] = a
	}
	return reversed
}

func (r *runner) noteLoad() {
	r.results.Machine.Loads = append(r.results.Machine.Loads, loadAverage())
}

// --- pods ---------------------------------------------------------------------

// The bench's pods run the pause program as their one container, as the
// kubelet's own density tests do: it does nothing, and, being a Go program,
// it has a SIGTERM handler from its first instruction. A shell with a trap
// would not do: a deletion that lands before the trap is set is ignored by
// PID 1 and lasts the whole grace period.
func (r *runner) pod(a *agent, name, workload string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: r.ns,
			Labels:    map[string]string{"app": "bench", "agent": a.Name, "workload": workload},
		},
		Spec: corev1.PodSpec{
			// Bound here, so the scheduler is out of the measured path.
			NodeName: a.Node,
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           r.settings.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
}

// sleeperCommand keeps a busybox container running until it is told to
// stop; the probe workload needs a shell in its container.
var sleeperCommand = []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}

// initPod has a busybox init container that exits at once before the main
// container and, with -readiness-probe (the default), a busybox main
// container with an exec readiness probe.
func (r *runner) initPod(a *agent, name string) *corev1.Pod {
	pod := r.pod(a, name, "init")
	pod.Spec.InitContainers = []corev1.Container{{
		Name:            "init",
		Image:           r.settings.InitImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"true"},
	}}
	if r.settings.ReadinessOn {
		main := &pod.Spec.Containers[0]
		main.Image = r.settings.InitImage
		main.Command = sleeperCommand
		main.ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
			PeriodSeconds: 1,
		}
	}
	return pod
}

// The objects a users' pod reads, made once in the bench's namespace.
const (
	// userWorkload marks the users' pods' bursts (BurstRun.Workload).
	userWorkload  = "user"
	userConfigMap = "bench-config"
	userSecret    = "bench-secret"
)

// userPod is a pod like users' own: a busybox container that keeps
// running, with what the API server and the agent add to nearly every real
// pod — the default ServiceAccount's token (projected), service links —
// plus a ConfigMap volume and an environment variable from a Secret.
func (r *runner) userPod(a *agent, name string) *corev1.Pod {
	pod := r.pod(a, name, "user")
	main := &pod.Spec.Containers[0]
	main.Image = r.settings.InitImage
	main.Command = sleeperCommand
	main.Env = []corev1.EnvVar{{
		Name: "PASSWORD",
		ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: userSecret},
			Key:                  "password",
		}},
	}}
	main.VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/bench"}}
	pod.Spec.Volumes = []corev1.Volume{{
		Name: "config",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: userConfigMap},
		}},
	}}
	enableServiceLinks := true
	pod.Spec.EnableServiceLinks = &enableServiceLinks
	return pod
}

// threeContainerPod is a users' pod of three busybox containers (an app
// and two helpers beside it), the app with an exec readiness probe.
func (r *runner) threeContainerPod(a *agent, name string) *corev1.Pod {
	pod := r.userPod(a, name)
	pod.Labels["workload"] = "three"
	app := pod.Spec.Containers[0]
	app.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/etc/bench/greeting"}}},
		PeriodSeconds: 1,
	}
	helper := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: r.settings.InitImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: sleeperCommand}
	}
	pod.Spec.Containers = []corev1.Container{app, helper("logger"), helper("proxy")}
	return pod
}

// --- one pod at a time --------------------------------------------------------

// single creates one pod, waits until it is Running and Ready, deletes it
// and waits until it is gone.
func (r *runner) single(ctx context.Context, a *agent, pod *corev1.Pod) (PodRun, error) {
	ctx, cancel := context.WithTimeout(ctx, r.podTimeout)
	defer cancel()
	names := []string{pod.Name}
	r.tracker.forget(names)
	start := time.Now()
	if _, err := r.client.CoreV1().Pods(r.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return PodRun{}, fmt.Errorf("creating pod %s/%s: %w", r.ns, pod.Name, err)
	}
	ready, err := r.tracker.waitReady(ctx, names)
	if err != nil {
		return PodRun{}, fmt.Errorf("pod %s on node %s (%s): %w", pod.Name, a.Node, a.Name, err)
	}
	deleting := time.Now()
	if err := r.client.CoreV1().Pods(r.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		return PodRun{}, fmt.Errorf("deleting pod %s/%s: %w", r.ns, pod.Name, err)
	}
	gone, err := r.tracker.waitGone(ctx, names)
	if err != nil {
		return PodRun{}, fmt.Errorf("pod %s on node %s (%s): %w", pod.Name, a.Node, a.Name, err)
	}
	window := newAuditWindow(a.User, start, gone[0])
	r.windows = append(r.windows, window)
	run := PodRun{
		Start:        start,
		ReadySeconds: ready[0].Sub(start).Seconds(),
		GoneSeconds:  gone[0].Sub(deleting).Seconds(),
		Requests:     window.Counts,
	}
	if a.Log != "" {
		// The line is written with the Ready status, before the pod is
		// gone: it is there by now.
		agentLog, err := readLogTail(a.Log, 8<<20)
		if err != nil {
			return PodRun{}, fmt.Errorf("reading %s's log: %w", a.Name, err)
		}
		told, found, err := findStartSteps(agentLog, r.ns, pod.Name)
		if err != nil {
			return PodRun{}, err
		} else if !found {
			return PodRun{}, fmt.Errorf("%s's log %s tells no start of pod %s/%s", a.Name, a.Log, r.ns, pod.Name)
		}
		told.seenSinceRequest(start)
		run.Steps, run.StepOrder = told.Steps, told.Order
	}
	return run, nil
}

// singleAlone is single with the other agents frozen: a start of a few
// hundred milliseconds would otherwise meet whatever the other agent is
// doing at that moment (its relist, the clean-up of its own last pod),
// which the floor, taken with both frozen, never meets. The agent under
// test may have been thawed a moment ago: it settles first (thawSettle).
func (r *runner) singleAlone(ctx context.Context, a *agent, pod *corev1.Pod) (PodRun, error) {
	if err := pause(ctx, thawSettle()); err != nil {
		return PodRun{}, err
	}
	thaw, err := freezeAgents(r.others(a))
	defer thaw()
	if err != nil {
		return PodRun{}, err
	}
	return r.single(ctx, a, pod)
}

// others are the agents but a.
func (r *runner) others(a *agent) []*agent {
	var others []*agent
	for _, other := range r.agents {
		if other != a {
			others = append(others, other)
		}
	}
	return others
}

// runSingles runs one pod at a time on each agent in turn; afterRound, if
// any, runs after each agent has had its pod of the round.
func (r *runner) runSingles(ctx context.Context, workload string, runs int, makePod func(a *agent, name string) *corev1.Pod, record func(*AgentResults, PodRun), afterRound func(ctx context.Context, i int) error) error {
	for i := range runs {
		r.noteLoad()
		for _, a := range inTurn(r.agents, i) {
			run, err := r.singleAlone(ctx, a, makePod(a, fmt.Sprintf("%s-%s-%d", a.Name, workload, i)))
			if err != nil {
				return err
			}
			record(r.results.Agents[a.Name], run)
			log.Printf("%s %d/%d %s: Ready after %.3fs, gone after %.3fs", workload, i+1, runs, a.Name, run.ReadySeconds, run.GoneSeconds)
		}
		if afterRound != nil {
			if err := afterRound(ctx, i); err != nil {
				return err
			}
		}
	}
	return nil
}

// all runs f for 0..n-1 at once and returns the first error.
func (r *runner) all(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = f(ctx, i) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pause waits d unless ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
