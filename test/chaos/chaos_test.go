package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/test/chaos/criproxy"
	"github.com/nodelet/nodelet/test/chaos/invariants"
	"github.com/nodelet/nodelet/test/chaos/schedule"
	"github.com/nodelet/nodelet/test/e2e"
)

// TestChaos is the chaos run: nodelet behind the fault-injecting CRI
// proxy, pods churned and faults injected for -duration, then the faults
// stopped, every pod left to converge, every pod deleted, and the trace
// and the node checked.
func TestChaos(t *testing.T) {
	env := stackEnv
	ctx := t.Context()
	fw, err := e2e.NewFramework(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos run: seed %d, %s of churn and faults, %d pods at once", *seed, *duration, *livePods)

	// nodelet talks to containerd through the proxy.
	proxySocket := filepath.Join(env.StateDir, "run", "criproxy.sock")
	proxy, err := criproxy.New(env.CRIEndpoint, *seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Serve(proxySocket); err != nil {
		t.Fatal(err)
	}
	defer proxy.Stop()
	// The runtime's CNI plugins wrapped, the node's disk found: the CNI
	// and disk faults' places.
	cniWrapper, err := wrapCNI(env)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cniWrapper.Restore(); err != nil {
			t.Errorf("unwrapping the CNI plugins: %v", err)
		}
	}()
	diskFile, err := nodeDiskFile(env)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := freeDisk(diskFile); err != nil {
			t.Error(err)
		}
	}()
	nodelet, err := e2e.NewNodelet(nodeletBin, env)
	if err != nil {
		t.Fatal(err)
	}
	fw.Nodelet = nodelet
	nodelet.SetExtraArgs(append([]string{"--container-runtime-endpoint=unix://" + proxySocket}, evictionArgs()...))
	if err := nodelet.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := nodelet.Stop(30 * time.Second); err != nil {
			t.Errorf("stopping nodelet: %v", err)
		}
	}()
	waitForNodeReady(t, fw)

	ns := newNamespace(t, fw)
	list, err := fw.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watched := make(chan error, 1)
	go func() { watched <- rec.watch(watchCtx, fw.Client, ns, list.ResourceVersion) }()

	samples := &sampler{}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	defer stopSampling()
	sampled := make(chan struct{})
	go func() { samples.run(sampleCtx, nodelet, env.NodeletMetricsAddr, rec); close(sampled) }()

	// Two random streams from the seed: the churn's and the faults'.
	nodeletPort, _ := strconv.Atoi(env.NodeletPort)
	churn := &churner{
		client: fw.Client, ns: ns, image: env.BusyboxImage, kinds: podKinds(nodeletPort),
		rng: rand.New(rand.NewPCG(*seed, 1)), target: *livePods, created: map[string]int{},
	}
	plan := schedule.Plan(*seed, *duration, schedule.Pauses, schedule.Kinds(*apiStopMax))
	logPlan(t, plan, *duration)
	inject := &injector{
		env: env, nodelet: nodelet, proxy: proxy, cni: cniWrapper, diskFile: diskFile, runtime: fw.Runtime, rec: rec,
		rng: rand.New(rand.NewPCG(*seed, 2)), plan: plan, counts: map[string]int{},
	}
	start := time.Now()
	until := start.Add(*duration)
	// The churn stops with the faults, past the deadline too when the
	// first round of faults overran it: from then on the pods there must
	// converge.
	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan struct{})
	go func() { churn.run(churnCtx); close(churned) }()
	err = inject.run(ctx, until)
	stopChurn()
	<-churned
	if err != nil {
		t.Fatalf("the faults could not be injected (or undone): %v", err)
	}
	if missing := inject.missingKinds(); len(missing) > 0 {
		t.Errorf("faults of %d kinds never fired in the %s run with seed %d: %s; the run does not exercise what it claims to (injected: %s)",
			len(missing), *duration, *seed, strings.Join(missing, ", "), counts(inject.counts, schedule.Names))
	}

	// Every pod converges; the bound is the checker's, this wait only
	// gives it time to see them do so.
	_ = await.Poll(ctx, *converge+30*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
		pods, err := fw.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp == nil && !invariants.Converged(&pods.Items[i]) {
				return false, nil
			}
		}
		return true, nil
	}))
	deleteAll(t, fw, ns, rec)
	rec.mark(invariants.End, "")
	stopWatch()
	if err := <-watched; err != nil {
		t.Errorf("watching the churned pods: %v", err)
	}
	stopSampling()
	<-sampled

	trace := rec.trace()
	writeTrace(t, env, trace)
	result := invariants.Check(trace, invariants.Bounds{
		// A deletion may meet nodelet down, the runtime restarting or
		// the API server stopped: generous, as the kubelet's own e2e.
		DeletionSlack: 60*time.Second + *apiStopMax,
		Converge:      *converge,
	})
	// One t.Errorf each, the pod's states and the faults before it in
	// its message: what reads the output keeps each message whole.
	for _, v := range result.Violations {
		t.Errorf("invariant violated: %s", v)
	}
	leaks := waitForNoLeaks(t, fw)
	for _, leak := range leaks {
		t.Errorf("leaked: %s", leak)
	}
	if samples.crashes > 0 {
		t.Errorf("nodelet exited on its own %d times (see the trace's faults and its log %s)", samples.crashes, env.NodeletLog)
	}

	faults, calls := proxy.Counts()
	fmt.Print(figure{
		seed: *seed, duration: *duration, pods: churn.total(), kinds: len(churn.created), apiErrors: churn.apiErrors,
		faults: inject.counts, criFaults: faults, criCalls: calls,
		evicted:    evictedPods(trace),
		violations: len(result.Violations), leaks: len(leaks), crashes: samples.crashes,
		samples: samples, convergedAfter: result.ConvergedAfter, converge: *converge,
		faultsFor: inject.stopped.Sub(start),
	}.String())
}

// logPlan says how the run's faults are planned: the bag's rounds, and
// how much of each range the run has room for.
func logPlan(t *testing.T, plan schedule.Schedule, run time.Duration) {
	t.Helper()
	var firstRound time.Duration
	for _, step := range plan.Steps {
		if step.Round == 0 {
			firstRound = step.End
		}
	}
	t.Logf("faults planned: %d, the first round of every kind over by %s at the latest (run %s), pauses and holds at %.0f%% of their spans",
		len(plan.Steps), firstRound, run, 100*plan.Scale)
	for _, step := range plan.Steps {
		t.Logf("  round %d at %s: %s for %s", step.Round, step.Start, step.Kind, step.Hold)
	}
}

func waitForNodeReady(t *testing.T, fw *e2e.Framework) {
	t.Helper()
	await.Eventually(t, 2*time.Minute, "the node to be Ready", await.Condition(func(ctx context.Context) (bool, error) {
		node, err := fw.Client.CoreV1().Nodes().Get(ctx, fw.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}))
}

// newNamespace makes the run's namespace and waits for its default
// ServiceAccount (pods are refused before it).
func newNamespace(t *testing.T, fw *e2e.Framework) string {
	t.Helper()
	ns, err := fw.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "chaos-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = fw.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	await.Eventually(t, time.Minute, "the namespace's default ServiceAccount", await.Condition(func(ctx context.Context) (bool, error) {
		_, err := fw.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}))
	return ns.Name
}

// deleteAll deletes every pod left and waits until the API and the watch
// have seen each gone.
func deleteAll(t *testing.T, fw *e2e.Framework, ns string, rec *recorder) {
	t.Helper()
	pods, err := fw.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		err := fw.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](2)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pod %s: %v", pod.Name, err)
		}
	}
	await.Eventually(t, 3*time.Minute, "every churned pod to leave the API", await.Condition(func(ctx context.Context) (bool, error) {
		pods, err := fw.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, err
	}))
	await.Eventually(t, time.Minute, "the watch to see every pod go", await.Condition(func(context.Context) (bool, error) {
		seen, gone := map[string]bool{}, map[string]bool{}
		for _, e := range rec.trace() {
			if e.Pod == nil {
				continue
			}
			seen[string(e.Pod.UID)] = true
			if e.Kind == invariants.PodGone {
				gone[string(e.Pod.UID)] = true
			}
		}
		return len(seen) == len(gone), nil
	}))
}

// waitForNoLeaks gives nodelet's garbage collection two minutes to leave
// the node with nothing no pod explains, and returns what is left.
func waitForNoLeaks(t *testing.T, fw *e2e.Framework) []string {
	t.Helper()
	var leaks []string
	err := await.Poll(t.Context(), 2*time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		state, err := gatherNodeState(ctx, fw)
		if err != nil {
			return false, err
		}
		leaks = invariants.Leaks(state)
		return len(leaks) == 0, nil
	}))
	if err != nil && leaks == nil {
		t.Errorf("reading the node's state: %v", err)
	}
	return leaks
}

func writeTrace(t *testing.T, env e2e.Env, trace []invariants.Event) {
	t.Helper()
	path := *tracePath
	if path == "" {
		path = filepath.Join(env.StateDir, "logs", "chaos-trace.jsonl")
	}
	file, err := os.Create(path)
	if err != nil {
		t.Errorf("writing the trace: %v", err)
		return
	}
	defer file.Close()
	if err := invariants.WriteTrace(file, trace); err != nil {
		t.Errorf("writing the trace: %v", err)
	}
	t.Logf("trace of %d events in %s", len(trace), path)
}
