package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The companion's runtime: containerd 2, built from its Go module at the
// version the tests pin, and the RuntimeOutOfDate condition by which
// nodelet says that a helm upgrade changed it, until the documented
// procedure (docs/installation.md, "Upgrading the runtime") replaces the
// runtime's pod.

// runtimeOutOfDate is the companion Node's condition (node.NodeRuntimeOutOfDate).
const runtimeOutOfDate corev1.NodeConditionType = "RuntimeOutOfDate"

// pinnedContainerdVersion is CONTAINERD2_VERSION in hack/lib.sh: the
// containerd the image carries.
func pinnedContainerdVersion(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "hack", "lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CONTAINERD2_VERSION=(\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("hack/lib.sh sets no CONTAINERD2_VERSION")
	}
	return string(m[1])
}

// isVersion says whether a containerd's version is want (v2.4.2): a
// containerd built with go install says 2.4.2+unknown, its module's
// version and no commit.
func isVersion(got, want string) bool {
	want = strings.TrimPrefix(want, "v")
	got = strings.TrimPrefix(got, "v")
	return got == want || strings.HasPrefix(got, want+"+")
}

// checkRuntimeServes asks the companion's runtime, on its socket, for its
// version through CRI: containerd at the pinned version, as the Node
// reports it too; and the RuntimeOutOfDate condition is False.
func checkRuntimeServes(t *testing.T, r companionRelease) {
	t.Helper()
	want := pinnedContainerdVersion(t)
	ctx := t.Context()
	endpoint := "unix://" + filepath.Join(r.dir, "run", "containerd.sock")
	service, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(30 * time.Second).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	version, err := service.Version(ctx, "")
	if err != nil {
		t.Fatalf("CRI Version of the companion's runtime at %s: %v", endpoint, err)
	}
	if version.RuntimeName != "containerd" || !isVersion(version.RuntimeVersion, want) {
		t.Errorf("CRI Version of the companion's runtime: %s %s, want containerd %s (hack/lib.sh's CONTAINERD2_VERSION)", version.RuntimeName, version.RuntimeVersion, want)
	}
	await.Eventually(t, time.Minute, "the companion Node to report containerd "+want+", RuntimeOutOfDate False", func(ctx context.Context) error {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := node.Status.NodeInfo.ContainerRuntimeVersion; got != "containerd://"+version.RuntimeVersion {
			return fmt.Errorf("containerRuntimeVersion %q, want the runtime's containerd://%s", got, version.RuntimeVersion)
		}
		c := nodeCondition(node, runtimeOutOfDate)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "RuntimeUpToDate" {
			return fmt.Errorf("RuntimeOutOfDate %+v", c)
		}
		return nil
	})
}

// checkRuntimeOutOfDate: after a helm upgrade that changed the runtime
// pod's image, the companion Node's RuntimeOutOfDate condition is True and
// names both images, a Warning event says so, and the runtime's pod is
// kept with the pods in it: still, the pod kept has its container.
func checkRuntimeOutOfDate(t *testing.T, r companionRelease, oldImage, newImage string, runtimePod, kept *corev1.Pod) {
	t.Helper()
	message := "image " + oldImage + " where " + newImage + " is wanted"
	await.Eventually(t, time.Minute, "RuntimeOutOfDate True on "+r.node, func(ctx context.Context) error {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := nodeCondition(node, runtimeOutOfDate)
		if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "RuntimeRevisionDiffers" || !strings.Contains(c.Message, message) {
			return fmt.Errorf("RuntimeOutOfDate %+v, want True, RuntimeRevisionDiffers, saying %q", c, message)
		}
		return nil
	})
	await.Eventually(t, time.Minute, "a RuntimeOutOfDate event of "+r.node, func(ctx context.Context) error {
		events, err := f.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + r.node + ",reason=RuntimeOutOfDate",
		})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, message) {
				return nil
			}
		}
		return fmt.Errorf("%d RuntimeOutOfDate events, none a Warning saying %q", len(events.Items), message)
	})
	if now := daemonSetPod(t, r, "runtime"); now.UID != runtimePod.UID {
		t.Errorf("the runtime's pod after helm upgrade: %s, want %s kept until it is replaced by hand", now.Name, runtimePod.Name)
	}
	checkSamePod(t, kept, "helm upgrade")
}

// runDeploymentOnCompanion starts a Deployment of one pod on the
// companion, which a drain evicts and its ReplicaSet makes again, and
// returns that pod once Running.
func runDeploymentOnCompanion(t *testing.T, ns, node string) *corev1.Pod {
	t.Helper()
	labels := map[string]string{"app": "restarted-by-its-controller"}
	pod := newPod(ns, "restarted-by-its-controller").obj()
	pod.Spec.Tolerations, pod.Spec.Affinity = onCompanion(node)
	// sleep does not stop on SIGTERM: the drain need not wait 30 s.
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "restarted-by-its-controller", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
	if _, err := f.Client.AppsV1().Deployments(ns).Create(t.Context(), deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return deploymentPodRunning(t, ns, node, "")
}

// deploymentPodRunning waits for the Deployment's pod other than the one
// of UID not to be Running on node, and returns it.
func deploymentPodRunning(t *testing.T, ns, node string, not types.UID) *corev1.Pod {
	t.Helper()
	var running *corev1.Pod
	await.Eventually(t, 2*time.Minute, "the Deployment's pod to be Running on "+node, func(ctx context.Context) error {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=restarted-by-its-controller"})
		if err != nil {
			return err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.UID != not && p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running = p
				return nil
			}
		}
		return fmt.Errorf("%d pods, none new and Running on %s", len(pods.Items), node)
	})
	return running
}

// checkSamePod: the pod is still there with the container instance it
// had (same UID and container ID, no restart).
func checkSamePod(t *testing.T, pod *corev1.Pod, after string) {
	t.Helper()
	now, err := f.Client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod %s after %s: %v", pod.Name, after, err)
	}
	b, a := pod.Status.ContainerStatuses[0], now.Status.ContainerStatuses[0]
	if now.UID != pod.UID || a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount || a.State.Running == nil {
		t.Errorf("pod %s after %s: %s", pod.Name, after, describePod(now))
	}
}

// replaceRuntime carries out the procedure that brings a companion to the
// runtime its release wants, as docs/installation.md gives it: cordon
// and drain the companion Node, delete the runtime's pod (its DaemonSet,
// OnDelete, makes it again from the upgraded template), whose
// replacement nodelet follows by restarting into the new pod's cgroup,
// and uncordon the Node. Returns nodelet's pod, its container restarted,
// and the runtime's new pod.
func replaceRuntime(t *testing.T, r companionRelease) (*corev1.Pod, *corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	f.mustKubectl(t, "drain", r.node, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=2m")
	runtimePod, agent := daemonSetPod(t, r, "runtime"), daemonSetPod(t, r, "agent")
	restarts := containerStatus(agent, "nodelet").RestartCount
	if err := f.Client.CoreV1().Pods(runtimePod.Namespace).Delete(ctx, runtimePod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitForPodGone(t, runtimePod, 2*time.Minute)
	// nodelet's pod is not deleted: its container sees the runtime's pod
	// replaced and restarts into the new one (docs/installation.md).
	var newAgent, newRuntime *corev1.Pod
	await.Eventually(t, 3*time.Minute, "the runtime's new pod Ready, nodelet's container restarted into it", func(ctx context.Context) error {
		pods, err := f.Client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + r.name})
		if err != nil {
			return err
		}
		newAgent, newRuntime = nil, nil
		for i := range pods.Items {
			p := &pods.Items[i]
			ready, _ := runningAndReady(p)
			switch component := p.Labels["app.kubernetes.io/component"]; {
			case !ready || p.DeletionTimestamp != nil:
			case component == "agent" && p.UID == agent.UID:
				if c := containerStatus(p, "nodelet"); c != nil && c.RestartCount > restarts {
					newAgent = p
				}
			case component == "runtime" && p.UID != runtimePod.UID:
				newRuntime = p
			}
		}
		if newAgent == nil || newRuntime == nil {
			return fmt.Errorf("nodelet's container restarted and Ready %v, the runtime's new pod Ready %v", newAgent != nil, newRuntime != nil)
		}
		return nil
	})
	f.mustKubectl(t, "uncordon", r.node)
	return newAgent, newRuntime
}

// checkReplacedRuntimeRunsPods: after the procedure, the Deployment's new
// pod runs on the companion, in a sandbox of the new runtime, with its
// cgroup inside the new runtime pod's; the evicted one is gone.
func checkReplacedRuntimeRunsPods(t *testing.T, host hostEnv, r companionRelease, newRuntime, evicted *corev1.Pod) {
	t.Helper()
	pod := deploymentPodRunning(t, r.namespace, r.node, evicted.UID)
	if _, err := f.Client.CoreV1().Pods(evicted.Namespace).Get(t.Context(), evicted.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the drained pod %s: %v, want it gone", evicted.Name, err)
	}
	endpoint := "unix://" + filepath.Join(r.dir, "run", "containerd.sock")
	service, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(30 * time.Second).Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	sandboxes, err := service.ListPodSandbox(t.Context(), &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(pod.UID)},
	})
	if err != nil || len(sandboxes) != 1 || sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("the new runtime's sandboxes of pod %s: %v %v, want one ready", pod.Name, sandboxes, err)
	}
	checkPodCgroupInRuntimePod(t, host, newRuntime, pod)
}

// nodeCondition is the Node's condition of that type, nil when none.
func nodeCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
