//go:build full

package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/resources"
)

// TestCompanionOnSystemdKubeletNode installs charts/nodelet with helm on a
// node the kubelet v1.36 runs as most managed clusters' nodes are: the
// systemd cgroup driver on cgroup v2, containerd 2 with SystemdCgroup.
// The companion `<node>-nodelet` becomes Ready and runs a pod, whose
// cgroup nodelet made with cgroupfs inside the runtime pod's systemd
// slice (the chart's design: the companion's pods are held to the share
// the host's kubelet gives that pod), with its limit.
func TestCompanionOnSystemdKubeletNode(t *testing.T) {
	image := os.Getenv("NODELET_VM_IMAGE")
	if image == "" {
		t.Fatal("NODELET_VM_IMAGE (nodelet's image in the stack's registry, hack/build-image.sh vm) is not set")
	}
	const name = "vm"
	companion := name + "-nodelet"
	g := bootGuest(t, name)
	prepareHost(t, g, nodeConfig{runtime: "containerd2", driver: "systemd", containerWeight: "17"})
	startKubelet(t, g, name)
	waitForNodeReady(t, name, 5*time.Minute)

	ns := newNamespace(t)
	adminShell(t, fmt.Sprintf("kubectl label node %s nodelet.dev/companion=true && kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged", name, ns))
	registry := cluster.get("REGISTRY")
	repository, tag, _ := strings.Cut(image[strings.LastIndex(image, "/")+1:], ":")
	values := map[string]any{
		"image": map[string]any{"repository": image[:strings.LastIndex(image, "/")+1] + repository, "tag": tag},
		"runtime": map[string]any{
			"sandboxImage": cluster.get("PAUSE_IMAGE"),
			"registryMirrors": map[string]any{
				registry: []string{"http://" + cluster.get("GUEST_HOST_IP") + registry[strings.LastIndex(registry, ":"):]},
			},
		},
		// The guest's 8 GiB disk and 3 GiB of memory.
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "500m", "memory": "768Mi", "ephemeral-storage": "2Gi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "768Mi"},
		},
	}
	helmInstall(t, "companion", ns, values)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.client.CoreV1().Nodes().Delete(ctx, companion, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the companion Node: %v", err)
		}
	})

	// Under TCG: the image pulled through the host's registry, the
	// runtime's pod and nodelet's started, the CSR approved.
	waitForNodeReady(t, companion, 10*time.Minute)

	pod := busyboxPod(ns, "tenant", companion, "sleep", "3600")
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "nodelet.dev/companion", Operator: corev1.TolerationOpExists}}
	pod.Spec.Containers[0].Resources = resources.Requirements("memory=32Mi", "memory=64Mi")
	pod = createPod(t, pod)
	pod = waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	runtimePod := runtimePodOf(t, ns, name)
	// The companion's runtime (its containerd, in the runtime pod) knows
	// the container's process.
	id := containerID(t, pod, "app")
	cgroup := g.run(t, fmt.Sprintf(`pid=$(ctr --address /run/nodelet-companion/containerd/containerd.sock -n k8s.io task ls | awk -v id=%s '$1 == id { print $2 }')
test -n "$pid"
sed -n 's/^0:://p' /proc/$pid/cgroup`, id))
	t.Logf("the companion's pod %s runs in cgroup %s", pod.Name, cgroup)
	slice := "-pod" + strings.ReplaceAll(string(runtimePod.UID), "-", "_") + ".slice/"
	if !strings.HasPrefix(cgroup, "/kubepods.slice/") || !strings.Contains(cgroup, slice) {
		t.Errorf("the companion's container runs in cgroup %s, want one inside the runtime pod's slice (%s) of /kubepods.slice", cgroup, slice)
	}
	if got := g.readFile(t, "/sys/fs/cgroup"+cgroup+"/memory.max"); got != fmt.Sprint(64<<20) {
		t.Errorf("the companion's container's memory.max = %s, want %d", got, 64<<20)
	}
}

// startKubelet makes the guest a kubelet's node (testdata/kubelet-host.sh)
// with a client certificate of system:node:<name> from the cluster's CA.
func startKubelet(t *testing.T, g *guest, name string) {
	t.Helper()
	dir := t.TempDir()
	ca := cluster.get("CA_FILE")
	caKey := filepath.Join(filepath.Dir(ca), "ca.key")
	key, crt, csr := filepath.Join(dir, "kubelet.key"), filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.csr")
	for _, args := range [][]string{
		{"genrsa", "-out", key, "2048"},
		{"req", "-new", "-key", key, "-subj", "/O=system:nodes/CN=system:node:" + name, "-out", csr},
		{"x509", "-req", "-in", csr, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-days", "1", "-out", crt},
	} {
		if out, err := exec.CommandContext(t.Context(), "openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", args[0], err, out)
		}
	}
	g.copy(t, key, "/root/kubelet.key")
	g.copy(t, crt, "/root/kubelet.crt")
	g.copy(t, filepath.Join(cluster.repoRoot, ".cache", "bin", "kubelet"), "/root/kubelet")
	g.run(t, fmt.Sprintf("NODE_IP=$(ip -4 -o addr show scope global | awk '{ sub(\"/.*\", \"\", $4); print $4; exit }') API_SERVER=%s SERVICE_IP=%s bash -s <<'KUBELET'\n%s\nKUBELET",
		cluster.get("APISERVER_GUEST_URL"), cluster.get("SERVICE_IP"), readTestdata(t, "kubelet-host.sh")))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cluster.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Node %s: %v", name, err)
		}
	})
}

// helmInstall installs charts/nodelet as release name with the values,
// and removes it when the test ends (without its hooks: the guest goes
// with the test).
func helmInstall(t *testing.T, release, ns string, values map[string]any) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "values.json")
	data, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(cluster.repoRoot, ".cache", "bin", "helm")
	kubeconfig := cluster.get("ADMIN_KUBECONFIG")
	out, err := exec.CommandContext(t.Context(), helm, "install", release, filepath.Join(cluster.repoRoot, "charts", "nodelet"),
		"--namespace", ns, "--values", file, "--kubeconfig", kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if t.Failed() {
			state, _ := exec.CommandContext(ctx, filepath.Join(filepath.Dir(cluster.get("KUBECTL")), "kubectl"), "--kubeconfig", kubeconfig,
				"get", "pods,nodes", "-A", "-o", "wide").CombinedOutput()
			t.Logf("pods and nodes:\n%s", state)
		}
		if out, err := exec.CommandContext(ctx, helm, "uninstall", release, "--namespace", ns, "--no-hooks", "--kubeconfig", kubeconfig).CombinedOutput(); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
}

// runtimePodOf is the chart's runtime DaemonSet's pod on node.
func runtimePodOf(t *testing.T, ns, node string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	await.Eventually(t, time.Minute, "the runtime pod on "+node, func(ctx context.Context) error {
		pods, err := cluster.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return err
		}
		for i := range pods.Items {
			if strings.Contains(pods.Items[i].Name, "-runtime-") {
				found = &pods.Items[i]
				return nil
			}
		}
		return fmt.Errorf("none among %d pods", len(pods.Items))
	})
	return found
}
