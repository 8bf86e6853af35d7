//go:build full

package vm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The graceful shutdown runs after the plain reboot, last: it reboots the
// guest too.
func init() {
	nodeSteps = append(nodeSteps, nodeStep{"a reboot stops the pods gracefully by priority", false, testGracefulShutdown})
}

// shutdownBands are the step's shutdownGracePeriodByPodPriority: three
// bands of shutdownBandSeconds each. Under TCG a pod's stop takes about 12
// seconds (the preStop exec 2 to 4, the container's stop 3, the CNI
// plugin's DEL 6); a band too short for it ends with the pod still
// stopping, and the power goes before its Failed status is written, under
// the kubelet as under nodelet.
const shutdownBandSeconds = 20

// preStopStartSlack is how late past its band's start a preStop hook may
// run: an exec takes seconds to start under TCG.
const preStopStartSlack = 5

var shutdownPriorities = []struct {
	class string
	value int32
}{{"shutdown-low", 10}, {"shutdown-mid", 100000}, {"shutdown-high", 1000000}}

// testGracefulShutdown reboots the guest with systemd and checks what the
// kubelet's graceful node shutdown does: the Node goes NotReady with the
// kubelet's reason as the shutdown begins (watched from the host, where
// the API server runs), each pod's preStop hook runs, lowest priority
// first, within its band's share, each stopped pod ends Failed with the
// kubelet's reason, message and DisruptionTarget condition; after the
// reboot the Node is Ready, says Rebooted, and each Deployment's pod runs
// again.
func testGracefulShutdown(t *testing.T, n *node) {
	ctx := t.Context()
	n.withConfig(t, fmt.Sprintf("shutdownGracePeriodByPodPriority:\n- priority: 0\n  shutdownGracePeriodSeconds: %d\n- priority: 100000\n  shutdownGracePeriodSeconds: %d\n- priority: 1000000\n  shutdownGracePeriodSeconds: %d",
		shutdownBandSeconds, shutdownBandSeconds, shutdownBandSeconds))
	// The lock is held, and logind waits for the whole shutdown. nodelet
	// takes it after raising logind's delay, once it has started: the
	// Node's Ready of before the restart does not say it is there yet.
	await.Eventually(t, 2*time.Minute, "nodelet's delay lock, and logind's delay the bands' sum", func(ctx context.Context) error {
		out, err := n.guest.output(ctx, "systemd-inhibit --list --no-legend --no-pager")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "nodelet") || !strings.Contains(out, "delay") {
			return fmt.Errorf("systemd-inhibit --list shows no delay lock of nodelet:\n%s", out)
		}
		out, err = n.guest.output(ctx, "busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager InhibitDelayMaxUSec")
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("t %d", 3*shutdownBandSeconds*1000000); strings.TrimSpace(out) != want {
			return fmt.Errorf("InhibitDelayMaxUSec is %q, want %q, the bands' sum", out, want)
		}
		return nil
	})

	ns := newNamespace(t)
	const logDir = "/var/lib/nodelet-shutdown-test"
	n.run(t, "rm -rf "+logDir+" && mkdir -p "+logDir)
	for _, p := range shutdownPriorities {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: p.class}, Value: p.value}
		if _, err := cluster.client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cluster.client.SchedulingV1().PriorityClasses().Delete(context.Background(), p.class, metav1.DeleteOptions{})
		})
		pod := busyboxPod(ns, p.class, n.name, "sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done")
		pod.Spec.PriorityClassName = p.class
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
			// Seconds since boot to the hundredth, from the kernel all
			// pods share: busybox's date has no %N.
			Command: []string{"sh", "-c", "read up _ </proc/uptime; echo \"$up " + p.class + "\" >>/log/prestop; sleep 1"},
		}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log", MountPath: "/log"}}
		pod.Spec.Volumes = []corev1.Volume{{Name: "log", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: logDir}}}}
		labels := map[string]string{"app": p.class}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.class},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
			},
		}
		if _, err := cluster.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := map[string]*corev1.Pod{}
	for _, p := range shutdownPriorities {
		before[p.class] = runningPodOf(t, ns, p.class, nil)
	}

	// Watch the Node's Ready condition from the host through the shutdown.
	var mu sync.Mutex
	var seen []corev1.NodeCondition
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			if node, err := cluster.client.CoreV1().Nodes().Get(watchCtx, n.name, metav1.GetOptions{}); err == nil {
				for _, c := range node.Status.Conditions {
					if c.Type == corev1.NodeReady {
						mu.Lock()
						seen = append(seen, c)
						mu.Unlock()
					}
				}
			}
			select {
			case <-watchCtx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	bootID := n.bootID(t)
	n.reboot(t)
	stopWatch()
	<-watched

	mu.Lock()
	notReady := false
	for _, c := range seen {
		if c.Status == corev1.ConditionFalse && c.Reason == "KubeletNotReady" && c.Message == "node is shutting down" {
			notReady = true
		}
	}
	mu.Unlock()
	if !notReady {
		t.Errorf("the Node never said NotReady (KubeletNotReady, node is shutting down) during the shutdown; Ready was: %v", seen)
	}

	// The preStop hooks, in the bands' order, each within its share.
	lines := strings.Split(n.run(t, "cat "+logDir+"/prestop"), "\n")
	if len(lines) != len(shutdownPriorities) {
		t.Fatalf("preStop hooks ran %d times, want once per pod:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	var first float64
	for i, line := range lines {
		at, name, _ := strings.Cut(line, " ")
		seconds, err := strconv.ParseFloat(at, 64)
		if err != nil {
			t.Fatalf("preStop line %q: %v", line, err)
		}
		if name != shutdownPriorities[i].class {
			t.Errorf("preStop hook %d ran in %s, want %s: lowest priority first", i, name, shutdownPriorities[i].class)
		}
		if i == 0 {
			first = seconds
		}
		// A band begins at most its predecessors' shares after the first.
		if limit := float64(i*shutdownBandSeconds + preStopStartSlack); seconds-first > limit {
			t.Errorf("preStop hook of %s ran %.1fs after the first, past its band's start (%.0fs)", name, seconds-first, limit)
		}
	}

	// The stopped pods' statuses, as the kubelet writes them.
	for class, old := range before {
		got, err := cluster.client.CoreV1().Pods(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s of %s: %v", old.Name, class, err)
			continue
		}
		if got.Status.Phase != corev1.PodFailed || got.Status.Reason != "Terminated" || got.Status.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("pod %s is %s/%s/%q, want Failed, Terminated and the kubelet's message: %s", got.Name, got.Status.Phase, got.Status.Reason, got.Status.Message, describe(got))
		}
		found := false
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "TerminationByKubelet" &&
				c.Message == "Pod was terminated in response to imminent node shutdown." {
				found = true
			}
		}
		if !found {
			t.Errorf("pod %s has no DisruptionTarget condition of the kubelet's: %s", got.Name, describe(got))
		}
	}

	// After the reboot: Ready, Rebooted, the pods running again.
	waitForNodeReady(t, n.name, 5*time.Minute)
	newBoot := n.bootID(t)
	await.Eventually(t, time.Minute, "the Rebooted event of node "+n.name, func(ctx context.Context) error {
		events, err := cluster.client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + n.name + ",reason=Rebooted"})
		if err != nil {
			return err
		}
		want := fmt.Sprintf("Node %s has been rebooted, boot id: %s", n.name, newBoot)
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Message == want {
				return nil
			}
		}
		return fmt.Errorf("no Warning Rebooted event %q among %d (the boot before was %s)", want, len(events.Items), bootID)
	})
	for class, old := range before {
		runningPodOf(t, ns, class, old)
	}
}

// runningPodOf waits for the Deployment class's pod that runs and is
// Ready on the node, other than old.
func runningPodOf(t *testing.T, ns, class string, old *corev1.Pod) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	await.Eventually(t, podStartTimeout, "a pod of "+class+" to run", func(ctx context.Context) error {
		pods, err := cluster.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + class})
		if err != nil {
			return err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if old != nil && p.UID == old.UID {
				continue
			}
			if ok, _ := runningAndReady(p); ok {
				found = p
				return nil
			}
		}
		return fmt.Errorf("none of %d runs and is Ready", len(pods.Items))
	})
	return found
}
