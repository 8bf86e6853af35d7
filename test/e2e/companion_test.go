package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// companionReadyTimeout covers, on a loaded machine, the host kubelet
// pulling the image and starting the pod, the approver's pod starting on
// the stack's node, the CSR's approval and signing, and the companion's
// first status.
const companionReadyTimeout = 5 * time.Minute

// TestCompanion installs charts/nodelet with `helm install` (helm built
// from its Go module) and the image built from this tree, on the stack's
// host node, which a real kubelet runs (hack/host-kubelet.sh): the
// runtime DaemonSet's pod brings containerd, nodelet gets its node's identity
// through a CSR the chart's approver approves, and the companion
// `<host>-nodelet` becomes Ready, with the host's share the pod requests
// as its capacity (cpu, memory, ephemeral-storage; less kubeReserved as
// allocatable, over which a pod is refused), the pod cgroup's PID limit
// as its pods', and the companion taint; nodelet's image has what
// formatting a local volume's device takes. Its node port serves a
// certificate the cluster's signer issued for it, which the approver
// approved, and no serving certificate beyond the companion's own is
// approved. A pod that tolerates the taint
// runs there, its cgroup inside the runtime's pod's, and its logs, exec and
// port-forward work through the companion's node API, and its hostPath
// volumes are the host's folders, not the runtime's container's; it keeps its
// container when the nodelet or the containerd container restarts, and
// when `helm upgrade` to a new image tag replaces nodelet's pod. The
// runtime is containerd at hack/lib.sh's version; that upgrade leaves the
// runtime's pod (OnDelete) with its pods, and the companion's
// RuntimeOutOfDate condition True, until the documented procedure (drain,
// delete the runtime's pod) brings the new runtime pod, nodelet's
// container restarted into it, the condition False, and a Deployment's
// pod running on it. When the runtime's pod is replaced under a running
// pod, the pod's processes die with its cgroup, nodelet follows the new
// runtime pod (an event on the Node, a restart) and starts the pod again
// in its cgroup, never making the old one again
// (checkRuntimePodReplaced). `helm uninstall` then drains the companion (its pod evicted, its preStop
// hook run), removes the DaemonSets' pods, and its post-delete hook the
// chart's host folders with the mounts under them, the iptables rules of
// its network (a DaemonSet's pod, not drained, left them), and the
// companion Node.
func TestCompanion(t *testing.T) {
	host := loadHostEnv(t)
	ctx := t.Context()
	ns := f.NewNamespace(t)
	suffix := ns[len(ns)-5:]
	r := companionRelease{
		name: "companion", namespace: ns, node: host.NodeName + "-nodelet",
		dir: filepath.Join(host.Dir, "companion"), bridge: "nlc-" + suffix,
		daemonPort: portOffset(t, 30),
	}
	// The chart's opt-in, as a user gives it: the node label its
	// DaemonSet selects.
	f.mustKubectl(t, "label", "node", host.NodeName, "nodelet.dev/companion=true")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, stderr, err := f.kubectl(ctx, nil, "label", "node", host.NodeName, "nodelet.dev/companion-"); err != nil {
			t.Errorf("cleanup: unlabelling %s: %v: %s", host.NodeName, err, stderr)
		}
	})
	// hostNetwork, hostPID and privileged containers.
	f.mustKubectl(t, "label", "namespace", ns, "pod-security.kubernetes.io/enforce=privileged")

	installCompanion(t, r, companionValues(host, r))
	// The companion's pods, in a namespace of their own: in the
	// release's, the chart's admission policy lets no one but the
	// DaemonSet controller make a pod with hostPath volumes. Deleted
	// before helm uninstall, while nodelet runs to stop its pods.
	apps := f.NewNamespace(t)

	var companion *corev1.Node
	await.Eventually(t, companionReadyTimeout, "the companion Node "+r.node+" to be Ready", func(ctx context.Context) error {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(node) {
			return fmt.Errorf("not Ready: %v", nodeConditions(node))
		}
		companion = node
		return nil
	})
	checkCompanionNode(t, companion, host)
	t.Run("the runtime is containerd at the pinned version, up to date", func(t *testing.T) { checkRuntimeServes(t, r) })
	t.Run("the node port's certificate is the cluster signer's, for the companion", func(t *testing.T) {
		checkServingCertificateFromSigner(t, host, r)
	})
	t.Run("serving certificate requests beyond the companion's own are left pending", func(t *testing.T) {
		checkBadServingRequestsPending(t, host, r)
	})
	t.Run("helm test: the companions Ready, a pod run on one", func(t *testing.T) { checkHelmTest(t, r) })
	t.Run("a pod over its allocatable is refused", func(t *testing.T) { checkOverAllocatableRefused(t, apps, companion) })

	agent, runtimePod := daemonSetPod(t, r, "agent"), daemonSetPod(t, r, "runtime")
	hostFiles := writeHostFiles(t, r)
	pod := runOnCompanion(t, apps, r.node, hostFiles)
	checkPodCgroupInRuntimePod(t, host, runtimePod, pod)
	t.Run("the pods' PID limit is the runtime pod's", func(t *testing.T) { checkPodsPidsLimit(t, host, runtimePod) })
	t.Run("hostPath volumes are the host's", func(t *testing.T) { checkHostPathVolumes(t, pod, hostFiles) })

	t.Run("logs", func(t *testing.T) {
		out := f.mustKubectl(t, "logs", "-n", apps, pod.Name)
		if !strings.Contains(out, "hello from the companion") {
			t.Errorf("kubectl logs of %s on %s: %q, want the line it printed", pod.Name, r.node, out)
		}
	})
	t.Run("exec", func(t *testing.T) {
		out := f.mustKubectl(t, "exec", "-n", apps, pod.Name, "--", "cat", "/www/index.html")
		if out != "served by the companion\n" {
			t.Errorf("kubectl exec in %s on %s: %q, want the file's content", pod.Name, r.node, out)
		}
	})
	t.Run("port-forward", func(t *testing.T) { checkPortForward(t, apps, pod.Name) })
	t.Run("the image formats a local volume's device", func(t *testing.T) { checkImageFormatsDevices(t, agent) })
	for container, in := range map[string]*corev1.Pod{"nodelet": agent, "containerd": runtimePod} {
		t.Run("a restart of the "+container+" container keeps the pod's container", func(t *testing.T) {
			checkRestartKeepsPod(t, host, in, container, pod)
		})
	}
	controlled := runDeploymentOnCompanion(t, ns, r.node)
	t.Run("helm upgrade to a new image tag keeps the pod's container, the runtime out of date", func(t *testing.T) {
		agent = checkUpgradeKeepsPod(t, host, r, agent, runtimePod, pod)
		checkRuntimeOutOfDate(t, r, host.Image, upgradeImage(host), runtimePod, controlled)
	})
	t.Run("the documented procedure replaces the runtime; controllers restart their pods on it", func(t *testing.T) {
		agent, runtimePod = replaceRuntime(t, r)
		checkRuntimeServes(t, r)
		checkReplacedRuntimeRunsPods(t, host, r, runtimePod, controlled)
	})
	// The procedure's drain took the pod (its preStop hook's mark is on
	// the host): another, for helm uninstall's drain to stop.
	f.waitForPodGone(t, pod, time.Minute)
	hostFiles = writeHostFiles(t, r)
	pod = runOnCompanion(t, apps, r.node, hostFiles)
	t.Run("a replaced runtime pod: nodelet follows it, the pod restarted there", func(t *testing.T) {
		agent, runtimePod, pod = checkRuntimePodReplaced(t, host, r, agent, runtimePod, pod)
	})

	// A DaemonSet's pod stays, as kubectl drain --ignore-daemonsets leaves
	// it: its network namespace, volumes and root file system are mounted
	// under the chart's host folders when the release goes, its iptables
	// rules are on the host, and the host's runtime kills its processes
	// with the runtime's pod.
	runDaemonSetOnCompanion(t, apps, r.node)
	if mounts := chartMounts(t, host, r); len(mounts) == 0 {
		t.Fatal("nothing is mounted under the chart's host folders before helm uninstall: its cleaning would not be checked")
	}
	if rules := networkRules(t, r.network()); len(rules) == 0 {
		t.Fatalf("no iptables rule of the network %s before helm uninstall: their removal would not be checked", r.network())
	}
	processes := companionProcesses(t, host, agent, runtimePod)
	if !slices.ContainsFunc(processes, func(p companionProcess) bool { return p.comm == "containerd" }) {
		t.Fatalf("no containerd among the companion's processes before helm uninstall (%d seen): their end would not be checked", len(processes))
	}
	drained := watchPod(t, pod)
	// Its pre-delete hook drains the companion (the pod's grace period);
	// its post-delete hook waits for the DaemonSets' pods to go (their
	// grace period, 30 s), then for its pod on the host (its image on the
	// host), then deletes the Node.
	if _, err := helm(ctx, "uninstall", r.name, "--namespace", ns, "--wait", "--timeout", "5m"); err != nil {
		t.Fatal(err)
	}
	t.Run("helm uninstall drains the companion: its pod evicted, stopped gracefully", func(t *testing.T) { checkDrained(t, drained(), hostFiles) })
	t.Run("helm uninstall deletes the companion Node, then its hooks' objects", func(t *testing.T) { checkCompanionRemoved(t, r) })
	t.Run("helm uninstall removes the chart's host folders and the mounts under them", func(t *testing.T) { checkHostCleaned(t, host, r) })
	t.Run("helm uninstall leaves no process of the companion", func(t *testing.T) { checkNoProcessLeft(t, processes) })
	// Its Node gone, nothing finishes the pod's deletion: force it (the
	// pod garbage collector may have already).
	err := f.Client.CoreV1().Pods(apps).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	f.waitForPodGone(t, pod, time.Minute)
	await.Eventually(t, 3*time.Minute, "the DaemonSets' pods to be gone after helm uninstall", func(ctx context.Context) error {
		for _, p := range []*corev1.Pod{agent, runtimePod} {
			_, err := f.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err == nil {
				return fmt.Errorf("pod %s still there", p.Name)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
}

// checkCompanionNode: the host's machine as labels, the pod's requests as
// capacity, the companion taint, the host's address.
func checkCompanionNode(t *testing.T, node *corev1.Node, host hostEnv) {
	t.Helper()
	if got := node.Labels[corev1.LabelHostname]; got != host.NodeName {
		t.Errorf("Node %s: label %s=%q, want the host's name %q", node.Name, corev1.LabelHostname, got, host.NodeName)
	}
	if !hasTaint(node, "nodelet.dev/companion") {
		t.Errorf("Node %s: taints %v, want nodelet.dev/companion:NoSchedule", node.Name, nodeTaints(node))
	}
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "500m", corev1.ResourceMemory: "512Mi", corev1.ResourceEphemeralStorage: "2Gi"} {
		if got := node.Status.Capacity[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("Node %s: capacity %s = %s, want the DaemonSet pod's request %s", node.Name, name, got.String(), want)
		}
	}
	// The share nodelet keeps for itself, the chart's kubeReserved
	// (100m, 128Mi), is not the pods', nor, as the kubelet counts it, the
	// hard eviction threshold (memory.available 100Mi by default).
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "400m", corev1.ResourceMemory: "284Mi"} {
		if got := node.Status.Allocatable[name]; got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("Node %s: allocatable %s = %s, want the pod's request less kubeReserved and the eviction threshold, %s", node.Name, name, got.String(), want)
		}
	}
	var internal string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			internal = a.Address
		}
	}
	if internal != host.NodeIP {
		t.Errorf("Node %s: InternalIP %q, want the host's %q", node.Name, internal, host.NodeIP)
	}
}

// checkOverAllocatableRefused: a pod bound to the companion that asks for
// more CPU than its allocatable is refused at admission, OutOfcpu, as the
// kubelet refuses it.
func checkOverAllocatableRefused(t *testing.T, ns string, node *corev1.Node) {
	allocatable := node.Status.Allocatable[corev1.ResourceCPU]
	asked := allocatable.MilliValue() + 1
	pod := f.createPod(t, newPod(ns, "over-allocatable").with(func(p *corev1.Pod) {
		p.Spec.NodeName = node.Name
		p.Spec.Tolerations = []corev1.Toleration{{Key: "nodelet.dev/companion", Operator: corev1.TolerationOpExists}}
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(asked, resource.DecimalSI)}
	}).obj())
	f.waitRejectedAs(t, pod, "OutOfcpu", fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: ", asked))
	// Gone while the companion's nodelet is there to finish the deletion.
	f.deletePod(t, pod, ptr.To[int64](0))
	f.waitForPodGone(t, pod, time.Minute)
}

// checkRestartKeepsPod stops a container of a DaemonSet pod (nodelet's, or
// the runtime's) through the host's runtime, as a crash would; the host
// kubelet starts it again, and the companion's pod keeps
// its container (the runtime's shims run in a cgroup of their own, their
// sockets on a host folder) and is still served (an exec through the
// node API).
func checkRestartKeepsPod(t *testing.T, host hostEnv, agent *corev1.Pod, container string, pod *corev1.Pod) {
	ctx := t.Context()
	agent, err := f.Client.CoreV1().Pods(agent.Namespace).Get(ctx, agent.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := containerStatus(agent, container)
	if stopped == nil {
		t.Fatalf("pod %s has no status of its %s container", agent.Name, container)
	}
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(host.CRIEndpoint).WithConnectionTimeout(30 * time.Second).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, id, _ := strings.Cut(stopped.ContainerID, "://")
	if err := runtimeService.StopContainer(ctx, id, 10); err != nil {
		t.Fatalf("stopping the %s container %s through the host's runtime: %v", container, id, err)
	}
	// Ready: nodelet's readiness probe; containerd, which has none, once
	// it runs.
	f.waitForPod(t, agent, 2*time.Minute, "to run its "+container+" container again, Ready", func(p *corev1.Pod) (bool, error) {
		c := containerStatus(p, container)
		return c != nil && c.RestartCount > stopped.RestartCount && c.State.Running != nil && c.Ready, nil
	})
	checkContainerKept(t, pod, "the "+container+" container's restart")
}

// checkContainerKept checks that the companion's pod still answers an
// exec after what happened, with the container instance it had in pod's
// status: same ID, restart count and start time.
func checkContainerKept(t *testing.T, pod *corev1.Pod, after string) {
	t.Helper()
	await.Eventually(t, time.Minute, "an exec in "+pod.Name+" after "+after, func(ctx context.Context) error {
		out, stderr, err := f.kubectl(ctx, nil, "exec", "-n", pod.Namespace, pod.Name, "--", "cat", "/www/index.html")
		if err != nil {
			return fmt.Errorf("%w: %s", err, stderr)
		}
		if out != "served by the companion\n" {
			return fmt.Errorf("read %q", out)
		}
		return nil
	})
	now, err := f.Client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, a := pod.Status.ContainerStatuses[0], now.Status.ContainerStatuses[0]
	if a.ContainerID != b.ContainerID || a.RestartCount != b.RestartCount || a.State.Running == nil || b.State.Running == nil ||
		!a.State.Running.StartedAt.Equal(&b.State.Running.StartedAt) {
		t.Errorf("pod %s's container after %s: %s, restarts %d, state %+v; want %s, restarts %d, running since %v",
			pod.Name, after, a.ContainerID, a.RestartCount, a.State, b.ContainerID, b.RestartCount, b.State.Running)
	}
}

// daemonSetPod is the release's pod of a DaemonSet on the host node:
// nodelet's (component agent) or the runtime's (component runtime).
func daemonSetPod(t *testing.T, r companionRelease, component string) *corev1.Pod {
	t.Helper()
	pods, err := f.Client.CoreV1().Pods(r.namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + r.name + ",app.kubernetes.io/component=" + component,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("the release has %d %s pods, want 1", len(pods.Items), component)
	}
	return &pods.Items[0]
}

// runOnCompanion starts a pod the scheduler places on the companion: it
// tolerates the companion taint and asks for that Node by name. It prints
// a line, serves a file over HTTP, and has hostPath volumes of the host's
// folder hostFiles (see writeHostFiles): in/ (a Directory, whole and by
// a sub path) and made/ (DirectoryOrCreate), where it writes a file.
func runOnCompanion(t *testing.T, ns, node, hostFiles string) *corev1.Pod {
	t.Helper()
	pod := newPod(ns, "on-the-companion").withShell(
		"echo hello from the companion; echo written by the pod > /host-made/from-the-pod; " +
			"mkdir -p /www && echo served by the companion > /www/index.html && exec httpd -f -p 8080 -h /www").obj()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "host-in", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: filepath.Join(hostFiles, "in"), Type: ptr.To(corev1.HostPathDirectory),
		}}},
		{Name: "host-made", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: filepath.Join(hostFiles, "made"), Type: ptr.To(corev1.HostPathDirectoryOrCreate),
		}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
		{Name: "host-in", MountPath: "/host-in", ReadOnly: true},
		{Name: "host-in", MountPath: "/host-sub", SubPath: "sub", ReadOnly: true},
		{Name: "host-made", MountPath: "/host-made"},
	}
	// helm uninstall's drain stops it gracefully: the hook's mark on the host.
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{
		Command: []string{"sh", "-c", "echo stopped gracefully > /host-made/pre-stop"},
	}}}
	created := createOnCompanion(t, pod, node)
	running := f.waitForPod(t, created, 3*time.Minute, "to be Running and Ready on the companion", runningAndReady)
	if running.Spec.NodeName != node {
		t.Fatalf("pod %s was placed on %s, want the companion %s", pod.Name, running.Spec.NodeName, node)
	}
	return running
}

// checkPortForward forwards a local port to the pod's 8080 with kubectl,
// through the API server and the companion's node API, and fetches the
// file the pod serves.
func checkPortForward(t *testing.T, ns, pod string) {
	_, stdout, stderr := f.startKubectl(t, nil, "port-forward", "-n", ns, "--address=127.0.0.1", "pod/"+pod, ":8080")
	var local string
	await.Eventually(t, time.Minute, "kubectl port-forward to listen", await.Condition(func(context.Context) (bool, error) {
		m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`).FindStringSubmatch(stdout.String())
		if m != nil {
			local = m[1]
		}
		return m != nil, nil
	}))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://127.0.0.1:" + local + "/index.html")
	if err != nil {
		t.Fatalf("a request through the port-forward: %v (kubectl: %s)", err, stderr.String())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(bufio.NewReader(resp.Body))
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != "served by the companion\n" {
		t.Errorf("a request through the port-forward: %d %q %v", resp.StatusCode, body, err)
	}
}

// writeHostFiles writes, on the host (the test shares the host node's
// files), <dir>/host-files/in/sub/hello for the companion's pod to read
// through its hostPath volumes, and returns <dir>/host-files. made/ is
// left for the pod's DirectoryOrCreate volume to make.
func writeHostFiles(t *testing.T, r companionRelease) string {
	t.Helper()
	dir := filepath.Join(r.dir, "host-files")
	sub := filepath.Join(dir, "in", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "hello"), []byte("written on the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "made")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkHostPathVolumes: the companion's runtime, in a container of the
// DaemonSet pod, mounts the host's folders: the pod reads the file the
// test wrote on the host, whole and through a sub path, and the file it
// writes in its DirectoryOrCreate volume lands in the host's folder. A
// runtime handed the host's paths as they are would mount folders of its
// own container's instead (made empty where missing).
func checkHostPathVolumes(t *testing.T, pod *corev1.Pod, hostFiles string) {
	out := f.mustKubectl(t, "exec", "-n", pod.Namespace, pod.Name, "--", "cat", "/host-in/sub/hello", "/host-sub/hello")
	if want := "written on the host\nwritten on the host\n"; out != want {
		t.Errorf("the host's file read in %s through its hostPath volume and a sub path of it: %q, want %q", pod.Name, out, want)
	}
	made := filepath.Join(hostFiles, "made", "from-the-pod")
	await.Eventually(t, time.Minute, "the file "+pod.Name+" wrote in its DirectoryOrCreate volume on the host at "+made, func(context.Context) error {
		data, err := os.ReadFile(made)
		if err != nil {
			return err
		}
		if string(data) != "written by the pod\n" {
			return fmt.Errorf("it holds %q", data)
		}
		return nil
	})
}

// checkImageFormatsDevices runs in the agent's nodelet container what
// nodelet runs for a local volume on a block device with nothing on it
// (volume/local_device_linux.go): blkid finds nothing, mkfs.ext4 formats
// it with nodelet's arguments, and blkid then finds ext4; mkfs.xfs is
// there for fsType xfs. A sparse file stands in for the device: the
// programs read and write either alike.
func checkImageFormatsDevices(t *testing.T, agent *corev1.Pod) {
	const script = `set -e
img=/tmp/format-check.img
rm -f $img && truncate -s 16M $img
if blkid -p -s TYPE -s PTTYPE -o export $img; then echo "blkid found something on a file of zeros"; exit 1; fi
mkfs.ext4 -F -m0 $img >/dev/null
blkid -p -s TYPE -s PTTYPE -o export $img
rm -f $img
command -v mkfs.xfs`
	out := f.mustKubectl(t, "exec", "-n", agent.Namespace, agent.Name, "-c", "nodelet", "--", "sh", "-c", script)
	if !strings.Contains(out, "TYPE=ext4") || !strings.Contains(out, "mkfs.xfs") {
		t.Errorf("formatting a device in nodelet's image: %q, want blkid's TYPE=ext4 and mkfs.xfs's path", out)
	}
}

// createOnCompanion creates pod on the companion node (its tolerations
// and affinity, small requests), deleted at the test's end.
func createOnCompanion(t *testing.T, pod *corev1.Pod, node string) *corev1.Pod {
	t.Helper()
	pod.Spec.Tolerations, pod.Spec.Affinity = onCompanion(node)
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
	}}
	created := f.createPod(t, pod)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := f.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	})
	return created
}
