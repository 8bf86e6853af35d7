package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// hostEnv is what hack/host-kubelet.sh writes to <state>/host/env (and
// hack/test.sh appends the image to): the stack's second node, run by a
// real kubelet, and the nodelet image in the stack's registry.
type hostEnv struct {
	// NodeName is the host node, NodeIP its InternalIP (the machine's
	// address).
	NodeName, NodeIP string
	// CgroupRoot is the kubelet's cgroupRoot (QoS cgroups under it).
	CgroupRoot string
	// PodPidsLimit is the kubelet's podPidsLimit, each pod cgroup's
	// pids.max.
	PodPidsLimit string
	// MountNS is the host node's mount namespace (a file nsenter takes)
	// when it has one of its own, where the machine's mounts are
	// private; empty when it is the machine's.
	MountNS string
	// CRIEndpoint is the host node's runtime, its kubelet's.
	CRIEndpoint string
	// Dir is the host node's state folder; what the chart puts on the
	// host goes under it.
	Dir string
	// KubeletLog and ContainerdLog are the host node's agents' logs.
	KubeletLog, ContainerdLog string
	// Image is nodelet's image, REGISTRY/nodelet:VERSION.
	Image string
}

// loadHostEnv reads $NODELET_E2E_HOST_ENV, failing the test without it:
// the companion tests need the stack's host node (the e2e-companion phase).
func loadHostEnv(t *testing.T) hostEnv {
	t.Helper()
	path := os.Getenv("NODELET_E2E_HOST_ENV")
	if path == "" {
		t.Fatal("NODELET_E2E_HOST_ENV is not set: the stack has no host node run by a kubelet; run the companion tests with hack/test.sh e2e-companion")
	}
	vars, err := readEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := hostEnv{
		NodeName: vars["HOST_NODE_NAME"], NodeIP: vars["HOST_NODE_IP"],
		CgroupRoot: vars["HOST_CGROUP_ROOT"], PodPidsLimit: vars["HOST_POD_PIDS_LIMIT"], MountNS: vars["HOST_MOUNT_NS"], CRIEndpoint: vars["HOST_CRI_ENDPOINT"], Dir: vars["HOST_DIR"],
		KubeletLog: vars["HOST_KUBELET_LOG"], ContainerdLog: vars["HOST_CONTAINERD_LOG"],
		Image: vars["NODELET_IMAGE"],
	}
	if env.NodeName == "" || env.NodeIP == "" || env.CgroupRoot == "" || env.PodPidsLimit == "" || env.CRIEndpoint == "" || env.Dir == "" || env.Image == "" {
		t.Fatalf("%s lacks HOST_NODE_NAME, HOST_NODE_IP, HOST_CGROUP_ROOT, HOST_POD_PIDS_LIMIT, HOST_CRI_ENDPOINT, HOST_DIR or NODELET_IMAGE: %v", path, vars)
	}
	return env
}

// companionRelease is a release of charts/nodelet on the host node.
type companionRelease struct {
	name, namespace string
	// node is the companion Node's name, dir the host folder of what the
	// chart puts on the host, bridge its pods' bridge.
	node, dir, bridge string
	// daemonPort is the companion's node API port.
	daemonPort int
}

// network is the release's CNI network's name.
func (r companionRelease) network() string { return "nodelet-" + r.bridge + "-net" }

// companionValues are the chart's values for the stack: the image from
// the stack's registry, every host folder
// and port the profile's own (the stack's sweep removes what is under its
// state folder and cgroup root), the stack's CA for the API server's
// client certificate, a smaller share of the machine than the default, and
// the disk eviction thresholds off, as the stack's nodes have them (the
// machine's disk is the CI's, whatever it holds; the memory threshold is
// the default).
func companionValues(host hostEnv, r companionRelease) map[string]any {
	repository, tag, _ := strings.Cut(host.Image[strings.LastIndex(host.Image, "/")+1:], ":")
	repository = host.Image[:strings.LastIndex(host.Image, "/")+1] + repository
	port := r.daemonPort
	return map[string]any{
		"image": map[string]any{"repository": repository, "tag": tag, "pullPolicy": "Always"},
		"runtime": map[string]any{
			"rootDir":         filepath.Join(r.dir, "containerd"),
			"stateDir":        filepath.Join(r.dir, "run"),
			"cniStateDir":     filepath.Join(r.dir, "cni"),
			"sandboxImage":    f.Env.PauseImage,
			"registryMirrors": map[string]any{f.Env.Registry: []string{"http://" + f.Env.Registry}},
		},
		"paths": map[string]any{
			"rootDir":         filepath.Join(r.dir, "nodelet"),
			"podLogDir":       filepath.Join(r.dir, "pod-logs"),
			"containerLogDir": filepath.Join(r.dir, "containers"),
		},
		"cni":            map[string]any{"networkName": r.network(), "bridge": r.bridge},
		"daemonPort":     port,
		"metrics":        map[string]any{"bindAddress": fmt.Sprintf("127.0.0.1:%d", port+1)},
		"healthProbe":    map[string]any{"port": port + 2},
		"clientCAFile":   "/host" + f.Env.CAFile,
		"logLevel":       "debug",
		"resources":      map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "2Gi"}, "limits": map[string]any{"cpu": "500m", "memory": "512Mi"}},
		"podAnnotations": map[string]any{"nodelet.dev/e2e": r.name},
		// The chart's folders are all under r.dir; no parent of theirs is
		// the chart's.
		"removeCompanions": map[string]any{"hostFoldersIfEmpty": []string{}},
		"extraArgs":        []string{"--eviction-hard=memory.available<100Mi,nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%,imagefs.inodesFree<0%"},
	}
}

// helm runs the helm that hack/check-manifests.sh builds (from its Go
// module) as the stack's admin.
func helm(ctx context.Context, args ...string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(root, ".cache", "bin", "helm"), append(args, "--kubeconfig", f.Env.AdminKubeconfig)...)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// installCompanion runs `helm install` of charts/nodelet with the values,
// and uninstalls it when the test ends if the test did not.
func installCompanion(t *testing.T, r companionRelease, values map[string]any) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	file := writeValues(t, values)
	if _, err := helm(t.Context(), "install", r.name, filepath.Join(root, "charts", "nodelet"), "--namespace", r.namespace, "--values", file); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if t.Failed() {
			logCompanionState(ctx, t, r)
		}
		if out, err := helm(ctx, "status", r.name, "--namespace", r.namespace); err == nil {
			if _, err := helm(ctx, "uninstall", r.name, "--namespace", r.namespace, "--wait", "--timeout", "3m"); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		} else if !strings.Contains(out, "not found") {
			t.Errorf("cleanup: %v", err)
		}
		deleteNode(t, r.node)
		// The bridge plugin leaves its bridge when the last pod goes.
		if out, err := exec.CommandContext(ctx, "ip", "link", "delete", r.bridge).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
			t.Errorf("cleanup: deleting bridge %s: %v: %s", r.bridge, err, out)
		}
	})
}

// writeValues writes the chart's values to a file of the test's.
func writeValues(t *testing.T, values map[string]any) string {
	t.Helper()
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// logCompanionState logs what a failed companion test leaves: the
// DaemonSet's and approver's pods, their containers' logs (through the host
// kubelet's and the stack nodelet's node APIs) and the companion Node.
func logCompanionState(ctx context.Context, t *testing.T, r companionRelease) {
	pods, err := f.Client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + r.name})
	if err != nil {
		t.Logf("listing the release's pods: %v", err)
		return
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		t.Logf("pod %s on %s: %s", pod.Name, pod.Spec.NodeName, describePod(pod))
		for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
			out, stderr, _ := f.kubectl(ctx, nil, "logs", "-n", r.namespace, pod.Name, "-c", c.Name, "--tail=80")
			t.Logf("logs of %s/%s:\n%s%s", pod.Name, c.Name, out, stderr)
		}
	}
	if node, err := f.Client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{}); err == nil {
		t.Logf("Node %s: conditions %+v", r.node, node.Status.Conditions)
	}
}

// portOffset is the stack's node API port plus delta: the profile's own.
func portOffset(t *testing.T, delta int) int {
	t.Helper()
	port, err := strconv.Atoi(f.Env.NodeletPort)
	if err != nil {
		t.Fatalf("the stack's NODELET_PORT %q: %v", f.Env.NodeletPort, err)
	}
	return port + delta
}

// checkHelmTest runs the chart's `helm test`: its first pod waits for the
// release's companions to be Ready, its second runs on one and prints
// nodelet's version; helm prints both pods' logs.
func checkHelmTest(t *testing.T, r companionRelease) {
	out, err := helm(t.Context(), "test", r.name, "--namespace", r.namespace, "--timeout", "5m", "--logs")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"TEST SUITE:     " + r.name + "-nodelet-test-ready",
		"TEST SUITE:     " + r.name + "-nodelet-test-pod",
		"Every companion is Ready",
		"Kubernetes v1.36.3+nodelet.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("helm test %s: no %q in its output:\n%s", r.name, want, out)
		}
	}
	if strings.Count(out, "Phase:          Succeeded") != 2 {
		t.Errorf("helm test %s: want both test pods Succeeded:\n%s", r.name, out)
	}
}
