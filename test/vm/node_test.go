package vm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/resources"
)

// fullTier is true in the full tier's build (node_full_test.go), which
// runs every step of a node's suite; the gate runs the smoke steps.
var fullTier bool

// nodeConfig is a guest node's runtime and cgroup driver.
type nodeConfig struct {
	// runtime is containerd (Debian's 1.6 with runc 1.1) or containerd2
	// (2.x with runc 1.5).
	runtime string
	// driver is the cgroup driver, nodelet's and the runtime's.
	driver string
	// containerWeight is the cpu.weight runc writes for a container of
	// 100m CPU (102 shares): runc 1.1 maps shares onto weights linearly,
	// as the kubelet and nodelet do for the pod cgroups (4); runc 1.5
	// with a quadratic fit of the logarithm that keeps the default
	// weight at 1024 shares (17).
	containerWeight string
}

// node is a guest with nodelet installed and joined.
type node struct {
	*guest
	name   string
	config nodeConfig
}

// nodeStep is one check on a node; the gate runs the smoke ones.
type nodeStep struct {
	name  string
	smoke bool
	run   func(t *testing.T, n *node)
}

// nodeSteps are run in order on one node: each leaves it Ready and as it
// found it, but for the pods of its own namespace.
var nodeSteps = []nodeStep{
	{"pod limits are the cgroup v2 files", true, testPodLimits},
	{"logs exec and port-forward through the API server", true, testLogsAndExec},
	{"restarting nodelet restarts no pod", true, testRestartKeepsPods},
	{"stopping nodelet leaves the pods running", false, testStopLeavesPods},
	{"an OOM kill is OOMKilled", false, testOOMKilled},
	{"a resize is in the cgroup files", false, testResize},
	{"pressure stall information is in /stats/summary", false, testPressureInStatsSummary},
	{"the reserved cgroups are limited", false, testReservedCgroups},
	{"memory pressure evicts", false, testMemoryEviction},
	{"a reboot brings the node and its pods back", false, testReboot},
}

// podPidsLimit is the host's podPidsLimit, which the pods' pids.max shows.
const podPidsLimit = 1024

// runNode boots a guest, makes it the host INSTALL.md expects (containerd
// configured with the driver, a pod network, the CA), installs nodelet by
// INSTALL.md, and runs the tier's steps on it.
func runNode(t *testing.T, config nodeConfig) {
	const name = "vm"
	g := bootGuest(t, name)
	prepareHost(t, g, config)
	// The guest is reached at the host's loopback, through the port qemu
	// forwards to the same port of the guest: the node's address and
	// port, which the API server dials for logs, exec and port-forward.
	installNodelet(t, g, name, hostInstall{
		nodeletArgs: fmt.Sprintf("--node-ip=127.0.0.1 --port=%s", cluster.get("NODELET_PORT")),
		config:      fmt.Sprintf("cgroupDriver: %s\npodPidsLimit: %d", config.driver, podPidsLimit),
	})
	n := &node{guest: g, name: name, config: config}
	if state := g.run(t, "systemctl is-active nodelet"); state != "active" {
		t.Fatalf("nodelet.service is %s", state)
	}
	for _, step := range nodeSteps {
		if !step.smoke && !fullTier {
			continue
		}
		if !t.Run(step.name, func(t *testing.T) { step.run(t, n) }) {
			// The next steps need a node that this one may have left
			// broken.
			return
		}
	}
}

// prepareHost makes the guest what a node's owner has before installing a
// node agent (testdata/prepare-host.sh): containerd configured with the
// cgroup driver, the registry and the pause image, a pod network, and the
// cluster's CA.
func prepareHost(t *testing.T, g *guest, config nodeConfig) {
	t.Helper()
	g.copy(t, cluster.get("CA_FILE"), "/root/ca.crt")
	registry := cluster.get("REGISTRY")
	g.run(t, fmt.Sprintf("RUNTIME=%s CGROUP_DRIVER=%s REGISTRY=%s REGISTRY_URL=http://%s:%s PAUSE_IMAGE=%s bash -s <<'PREPARE'\n%s\nPREPARE",
		config.runtime, config.driver, registry, cluster.get("GUEST_HOST_IP"), registry[strings.LastIndex(registry, ":")+1:],
		cluster.get("PAUSE_IMAGE"), readTestdata(t, "prepare-host.sh")))
}

// TestNodeOnCgroupfsDriver is a node with Debian 12's containerd 1.6 and
// runc 1.1 and the cgroupfs driver on cgroup v2, as a Debian 12 host
// without further setup has them.
func TestNodeOnCgroupfsDriver(t *testing.T) {
	runNode(t, nodeConfig{runtime: "containerd", driver: "cgroupfs", containerWeight: "4"})
}

// podCgroup is the pod cgroup's folder in the guest: nodelet's cgroup
// root (/nodelet, its default), the QoS tier (none for Guaranteed) and
// the pod, as each driver names them.
func (n *node) podCgroup(qos corev1.PodQOSClass, uid string) string {
	tier := ""
	if qos != corev1.PodQOSGuaranteed {
		tier = strings.ToLower(string(qos))
	}
	if n.config.driver == "cgroupfs" {
		return path.Join("/sys/fs/cgroup/nodelet/kubepods", tier, "pod"+uid)
	}
	// Each slice's name holds its parents' (systemd.slice(5)), with the
	// UID's dashes, which would read as a level, made underscores.
	slice := "/sys/fs/cgroup/nodelet.slice/nodelet-kubepods.slice"
	prefix := "nodelet-kubepods"
	if tier != "" {
		prefix += "-" + tier
		slice += "/" + prefix + ".slice"
	}
	return slice + "/" + prefix + "-pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
}

// containerCgroup is a container's folder below its pod's: the runtime
// names it, by the container's ID (runc's cgroupfs path) or as a scope
// (runc through systemd).
func (n *node) containerCgroup(podCgroup, id string) string {
	if n.config.driver == "cgroupfs" {
		return path.Join(podCgroup, id)
	}
	return path.Join(podCgroup, "cri-containerd-"+id+".scope")
}

// cgroupFiles reads files of a cgroup folder in the guest, by name.
func (n *node) cgroupFiles(t *testing.T, dir string, files ...string) map[string]string {
	t.Helper()
	var script strings.Builder
	for _, f := range files {
		fmt.Fprintf(&script, "printf '%%s=%%s\\n' %s \"$(cat %s)\"\n", f, shellQuote(path.Join(dir, f)))
	}
	got := map[string]string{}
	for _, line := range strings.Split(n.run(t, script.String()), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	return got
}

func checkFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for file, w := range want {
		if got[file] != w {
			t.Errorf("%s: %s = %q, want %q", what, file, got[file], w)
		}
	}
}

// testPodLimits runs a Burstable pod with requests and limits and reads
// them back from the guest's cgroup v2 files, as the kubelet writes them:
// memory.max the limit, cpu.max the quota over the 100 ms period,
// cpu.weight the request's shares (102 for 100m) on cgroup2's scale
// (1 + (102-2)*9999/262142 = 4), pids.max the node's podPidsLimit. The
// container's cgroup is the runtime's, its weight runc's mapping.
func testPodLimits(t *testing.T, n *node) {
	ns := newNamespace(t)
	pod := busyboxPod(ns, "limited", n.name, "sleep", "3600")
	pod.Spec.Containers[0].Resources = resources.Requirements("cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi")
	pod = createPod(t, pod)
	pod = waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	podDir := n.podCgroup(corev1.PodQOSBurstable, string(pod.UID))
	checkFiles(t, "pod cgroup "+podDir, n.cgroupFiles(t, podDir, "memory.max", "cpu.max", "cpu.weight", "pids.max"), map[string]string{
		"memory.max": fmt.Sprint(64 << 20),
		"cpu.max":    "20000 100000",
		"cpu.weight": "4",
		"pids.max":   fmt.Sprint(podPidsLimit),
	})
	containerDir := n.containerCgroup(podDir, containerID(t, pod, "app"))
	got := n.cgroupFiles(t, containerDir, "memory.max", "cpu.max", "cpu.weight", "cgroup.procs")
	checkFiles(t, "container cgroup "+containerDir, got, map[string]string{
		"memory.max": fmt.Sprint(64 << 20),
		"cpu.max":    "20000 100000",
		"cpu.weight": n.config.containerWeight,
	})
	if got["cgroup.procs"] == "" {
		t.Errorf("container cgroup %s holds no process", containerDir)
	}
	// The least weight for the BestEffort tier: shares 2 are weight 1.
	bestEffort := path.Dir(n.podCgroup(corev1.PodQOSBestEffort, "x"))
	checkFiles(t, "the besteffort tier "+bestEffort, n.cgroupFiles(t, bestEffort, "cpu.weight"), map[string]string{"cpu.weight": "1"})
	// The controllers a pod's limits need are delegated down the tree.
	for _, dir := range []string{path.Dir(podDir), podDir} {
		controllers := n.readFile(t, path.Join(dir, "cgroup.subtree_control"))
		for _, c := range []string{"cpu", "memory", "pids"} {
			if !strings.Contains(" "+controllers+" ", " "+c+" ") {
				t.Errorf("%s/cgroup.subtree_control = %q, want %s among them", dir, controllers, c)
			}
		}
	}
}

// testLogsAndExec reads a container's log, runs a command in it and
// forwards a port to it through the API server, which dials the guest's
// nodelet at the node's address: the container sees its own cgroup (a
// cgroup namespace of its own) with its limit.
func testLogsAndExec(t *testing.T, n *node) {
	ns := newNamespace(t)
	pod := busyboxPod(ns, "talker", n.name, "sh", "-c",
		"mkdir /www && echo served from the guest >/www/index.html && echo hello from the guest && exec httpd -f -p 8080 -h /www")
	pod.Spec.Containers[0].Resources = resources.Requirements("memory=32Mi", "memory=48Mi")
	pod = createPod(t, pod)
	waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	if out := adminShell(t, "kubectl -n "+ns+" logs talker"); out != "hello from the guest" {
		t.Errorf("kubectl logs = %q, want %q", out, "hello from the guest")
	}
	if out := adminShell(t, "kubectl -n "+ns+" exec talker -- cat /sys/fs/cgroup/memory.max"); out != fmt.Sprint(48<<20) {
		t.Errorf("kubectl exec cat /sys/fs/cgroup/memory.max = %q, want %d", out, 48<<20)
	}
	if got := portForwardGet(t, ns, "talker", 8080); got != "served from the guest\n" {
		t.Errorf("GET through kubectl port-forward = %q, want %q", got, "served from the guest\n")
	}
}

// portForwardGet GETs / of the pod's port through `kubectl port-forward`
// to a local port kubectl picks.
func portForwardGet(t *testing.T, ns, pod string, port int) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, cluster.get("KUBECTL"), "--kubeconfig", cluster.get("ADMIN_KUBECONFIG"),
		"-n", ns, "port-forward", "--address=127.0.0.1", "pod/"+pod, fmt.Sprintf(":%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// kubectl forwards until stopped: stop it, then reap it.
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	// "Forwarding from 127.0.0.1:LOCAL -> PORT"
	line, err := bufio.NewReader(stdout).ReadString('\n')
	local, _, found := strings.Cut(strings.TrimPrefix(line, "Forwarding from "), " ->")
	if err != nil || !found {
		t.Fatalf("kubectl port-forward said %q (%v): %s", line, err, stderr.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+local+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET through the forwarded port %s: %v; kubectl: %s", local, err, stderr.String())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// runningPod starts a pod that sleeps, Ready, and returns it with its
// container's ID and main process as the guest sees it.
func (n *node) runningPod(t *testing.T, ns, name string) (pod *corev1.Pod, id, pid string) {
	t.Helper()
	pod = createPod(t, busyboxPod(ns, name, n.name, "sleep", "3600"))
	pod = waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	id = containerID(t, pod, "app")
	pid = n.containerPID(t, id)
	return pod, id, pid
}

// containerPID is the main process of a container, from its runtime's
// task (ctr, the runtime's own client, in the guest).
func (n *node) containerPID(t *testing.T, id string) string {
	t.Helper()
	out := n.run(t, "ctr -n k8s.io task ls | awk -v id="+id+" '$1 == id { print $2, $3 }'")
	pid, status, _ := strings.Cut(out, " ")
	if status != "RUNNING" {
		t.Fatalf("container %s's task: %q, want RUNNING", id, out)
	}
	return pid
}

// checkUntouched checks that the pod's container is the one it was,
// running the same process, never restarted.
func (n *node) checkUntouched(t *testing.T, pod *corev1.Pod, id, pid string) {
	t.Helper()
	got, err := cluster.client.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ready, _ := runningAndReady(got); !ready {
		t.Errorf("pod %s is not Running and Ready: %s", pod.Name, describe(got))
	}
	if gotID := containerID(t, got, "app"); gotID != id || got.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("pod %s's container is %s with %d restarts, want %s never restarted", pod.Name, gotID, got.Status.ContainerStatuses[0].RestartCount, id)
	}
	if gotPID := n.containerPID(t, id); gotPID != pid {
		t.Errorf("container %s runs process %s, want %s (the same process)", id, gotPID, pid)
	}
}

// mainPID is nodelet.service's main process.
func (n *node) mainPID(t *testing.T) string {
	t.Helper()
	return n.run(t, "systemctl show -p MainPID --value nodelet")
}

// waitForNodeletSync waits until a restarted nodelet runs a new pod:
// by then it has synced every pod it found.
func (n *node) waitForNodeletSync(t *testing.T, ns, name string) {
	t.Helper()
	pod := createPod(t, busyboxPod(ns, name, n.name, "sleep", "3600"))
	waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
}

// testRestartKeepsPods restarts nodelet.service with a pod running: the
// unit's KillMode=process stops nodelet alone, and the new nodelet finds
// the pod's container in the runtime and keeps it. Its log is in the
// journal, both runs.
func testRestartKeepsPods(t *testing.T, n *node) {
	ns := newNamespace(t)
	pod, id, pid := n.runningPod(t, ns, "survivor")
	before := n.mainPID(t)
	n.run(t, "systemctl restart nodelet")
	if after := n.mainPID(t); after == before || after == "0" {
		t.Fatalf("nodelet's main PID is %s after the restart, was %s", after, before)
	}
	n.waitForNodeletSync(t, ns, "after-restart")
	n.checkUntouched(t, pod, id, pid)

	// Both runs' own log lines, in the unit's journal.
	starts := n.run(t, `journalctl -u nodelet -o cat --no-pager | grep -c '"Starting nodelet"' || true`)
	if starts != "2" {
		t.Errorf("the journal of nodelet.service holds %s \"Starting nodelet\" lines, want 2 (the first start and the restart)", starts)
	}
}

// testStopLeavesPods stops nodelet.service: the pods go on running
// without it, and it finds them again when it starts.
func testStopLeavesPods(t *testing.T, n *node) {
	ns := newNamespace(t)
	pod, id, pid := n.runningPod(t, ns, "orphan")
	n.run(t, "systemctl stop nodelet")
	if state := n.run(t, "systemctl is-active nodelet || true"); state != "inactive" {
		t.Fatalf("nodelet.service is %s after a stop, want inactive", state)
	}
	if got := n.containerPID(t, id); got != pid {
		t.Errorf("with nodelet stopped, container %s runs process %s, want %s", id, got, pid)
	}
	n.run(t, "systemctl start nodelet")
	waitForNodeReady(t, n.name, 3*time.Minute)
	n.waitForNodeletSync(t, ns, "after-stop")
	n.checkUntouched(t, pod, id, pid)
}

// testOOMKilled runs a container past its memory limit: the kernel kills
// it in its cgroup (memory.events' oom_kill), and the status says
// OOMKilled, exit code 137.
func testOOMKilled(t *testing.T, n *node) {
	ns := newNamespace(t)
	// tail keeps the line it reads whole, and /dev/zero has no end of line.
	pod := busyboxPod(ns, "hog", n.name, "tail", "/dev/zero")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Containers[0].Resources = resources.Requirements("memory=16Mi", "memory=16Mi")
	pod = createPod(t, pod)
	pod = waitForPod(t, pod, podStartTimeout, "to fail", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	s := pod.Status.ContainerStatuses[0].State.Terminated
	if s == nil || s.Reason != "OOMKilled" || s.ExitCode != 137 {
		t.Errorf("container hog ended %s, want terminated OOMKilled with exit code 137", describe(pod))
	}
}

// testReboot reboots the guest: the node comes back Ready with the new
// boot ID, and its pod runs again, in a new container (the runtime's
// state did not survive the boot). The pod ends on SIGTERM, so that
// systemd's shutdown does not wait its 90 s for it: graceful node
// shutdown is off in this configuration (the next step turns it on).
func testReboot(t *testing.T, n *node) {
	ns := newNamespace(t)
	pod := createPod(t, busyboxPod(ns, "phoenix", n.name, "sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"))
	pod = waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	id := containerID(t, pod, "app")
	bootID := n.bootID(t)
	n.reboot(t)
	await.Eventually(t, 5*time.Minute, "node "+n.name+" to be Ready on its new boot", func(ctx context.Context) error {
		node, err := cluster.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node.Status.NodeInfo.BootID == bootID {
			return fmt.Errorf("the Node still shows boot %s", bootID)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && c.LastHeartbeatTime.After(time.Now().Add(-time.Minute)) {
				return nil
			}
		}
		return fmt.Errorf("not Ready")
	})
	got := waitForPod(t, pod, podStartTimeout, "to run again after the reboot", func(p *corev1.Pod) (bool, error) {
		if len(p.Status.ContainerStatuses) == 0 || !strings.HasSuffix(p.Status.ContainerStatuses[0].ContainerID, id) {
			return runningAndReady(p)
		}
		return false, nil
	})
	if got.Status.ContainerStatuses[0].RestartCount == 0 {
		t.Errorf("pod %s runs again with 0 restarts, want the restart counted: %s", pod.Name, describe(got))
	}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
