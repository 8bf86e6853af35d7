package vm

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/resources"
)

// withConfig adds settings to the guest's /etc/nodelet/config.yaml and
// restarts nodelet on them, until the test ends: then the file is as it
// was, and nodelet restarted on it.
func (n *node) withConfig(t *testing.T, settings string) {
	t.Helper()
	n.run(t, "cp /etc/nodelet/config.yaml /etc/nodelet/config.yaml.before\ncat >>/etc/nodelet/config.yaml <<'CONFIG'\n"+settings+"\nCONFIG\nsystemctl restart nodelet")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		n.runContext(ctx, t, "mv /etc/nodelet/config.yaml.before /etc/nodelet/config.yaml\nsystemctl restart nodelet")
		if err := await.Poll(ctx, 3*time.Minute, nodeReady(n.name)); err != nil {
			t.Errorf("node %s is not Ready on its configuration of before: %v", n.name, err)
		}
	})
	waitForNodeReady(t, n.name, 3*time.Minute)
}

// testResize resizes a running container's CPU limit in place: the new
// quota is in its cgroup's and its pod's cpu.max, and it did not restart.
func testResize(t *testing.T, n *node) {
	ns := newNamespace(t)
	pod := busyboxPod(ns, "resized", n.name, "sleep", "3600")
	pod.Spec.Containers[0].Resources = resources.Requirements("cpu=100m,memory=32Mi", "cpu=200m,memory=64Mi")
	pod = createPod(t, pod)
	pod = waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	id := containerID(t, pod, "app")

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := cluster.client.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("300m")
		_, err = cluster.client.CoreV1().Pods(ns).UpdateResize(t.Context(), pod.Name, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("resizing pod %s: %v", pod.Name, err)
	}
	resized := waitForPod(t, pod, 2*time.Minute, "to run with the new CPU limit", func(p *corev1.Pod) (bool, error) {
		s := p.Status.ContainerStatuses
		return len(s) == 1 && s[0].Resources != nil && s[0].Resources.Limits.Cpu().MilliValue() == 300, nil
	})
	if s := resized.Status.ContainerStatuses[0]; s.RestartCount != 0 || !strings.HasSuffix(s.ContainerID, id) {
		t.Errorf("the resize restarted the container: %s", describe(resized))
	}
	podDir := n.podCgroup(corev1.PodQOSBurstable, string(pod.UID))
	for _, dir := range []string{podDir, n.containerCgroup(podDir, id)} {
		checkFiles(t, dir, n.cgroupFiles(t, dir, "cpu.max"), map[string]string{"cpu.max": "30000 100000"})
	}
}

// testReservedCgroups enforces the system's and Kubernetes' reservations
// on their cgroups: systemd's system.slice, where the host's daemons run,
// and one the node's owner made for the node's daemons. Their memory.max
// and cpu.weight are the reservations (100m and 200m of CPU are shares
// 102 and 204, weights 4 and 8).
func testReservedCgroups(t *testing.T, n *node) {
	// No dash in its name: to the systemd driver a dash is a level
	// (kube-reserved.slice is kube.slice/kube-reserved.slice).
	kube := "/kubelet.slice"
	n.run(t, "mkdir -p /sys/fs/cgroup"+kube)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n.runContext(ctx, t, "rmdir /sys/fs/cgroup"+kube)
	})
	n.withConfig(t, `enforceNodeAllocatable: [pods, system-reserved, kube-reserved]
systemReserved: {cpu: 100m, memory: 100Mi}
kubeReserved: {cpu: 200m, memory: 200Mi}
systemReservedCgroup: /system.slice
kubeReservedCgroup: `+kube)
	for _, tc := range []struct {
		dir            string
		memory, weight string
	}{
		{"/sys/fs/cgroup/system.slice", fmt.Sprint(100 << 20), "4"},
		{"/sys/fs/cgroup" + kube, fmt.Sprint(200 << 20), "8"},
	} {
		await.Eventually(t, time.Minute, tc.dir+"'s limits", func(ctx context.Context) error {
			got, err := n.output(ctx, fmt.Sprintf("echo $(cat %s/memory.max) $(cat %s/cpu.weight)", tc.dir, tc.dir))
			if err != nil {
				return fmt.Errorf("%w: %s", err, got)
			}
			if want := tc.memory + " " + tc.weight; strings.TrimSpace(got) != want {
				return fmt.Errorf("memory.max and cpu.weight are %q, want %q", strings.TrimSpace(got), want)
			}
			return nil
		})
	}
}

// testMemoryEviction sets memory.available's hard threshold a little
// below what the guest has free, and runs a BestEffort pod that fills a
// memory-backed emptyDir a little at a time: the eviction manager,
// reading cgroup v2's root memory.stat, sees the node under the threshold
// and evicts the pod with the kubelet's reason and message. The pod stops
// filling well before the guest runs out, so only the eviction ends it.
func testMemoryEviction(t *testing.T, n *node) {
	// memory.available as the kubelet computes it on cgroup v2: the
	// memory less the root cgroup's working set (anon + file -
	// inactive_file). The page cache dropped first, the working set is
	// at its least and the threshold at its highest: whatever the cache
	// holds again later only brings the node nearer to it.
	available, err := strconv.ParseInt(n.run(t, `sync && echo 3 >/proc/sys/vm/drop_caches
total=$(awk '/^MemTotal:/ { print $2 * 1024 }' /proc/meminfo)
awk -v total="$total" '$1 == "anon" { a = $2 } $1 == "file" { f = $2 } $1 == "inactive_file" { i = $2 } END { printf "%d\n", total - (a + f - i) }' /sys/fs/cgroup/memory.stat`), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	threshold := available - 300<<20
	n.withConfig(t, fmt.Sprintf("evictionHard: {memory.available: %dKi}", threshold>>10))

	ns := newNamespace(t)
	// 40 MiB a second, up to 1200 MiB: four times past the threshold.
	pod := busyboxPod(ns, "hog", n.name, "sh", "-c", "i=0; while [ $i -lt 30 ]; do dd if=/dev/zero of=/fill/$i bs=1M count=40 2>/dev/null; i=$((i+1)); sleep 1; done; sleep 3600")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Volumes = []corev1.Volume{{Name: "fill", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "fill", MountPath: "/fill"}}
	pod = createPod(t, pod)
	evicted := waitForPod(t, pod, 4*time.Minute, "to be evicted", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	message := regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: \d+(Ki|Mi|Gi)?, available: \d+(Ki|Mi|Gi)?\.`)
	if evicted.Status.Reason != "Evicted" || !message.MatchString(evicted.Status.Message) {
		t.Errorf("pod hog failed with reason %q, message %q; want Evicted, %s", evicted.Status.Reason, evicted.Status.Message, message)
	}
}

// testPressureInStatsSummary reads /stats/summary from the node's API:
// on cgroup v2 the node and a pod carry the pressure stall information of
// their cgroups (the root's, the pod's) for CPU, memory and IO.
func testPressureInStatsSummary(t *testing.T, n *node) {
	ns := newNamespace(t)
	pod, _, _ := n.runningPod(t, ns, "pressured")
	var summary statsapi.Summary
	await.Eventually(t, time.Minute, "the pod in /stats/summary", func(ctx context.Context) error {
		data, err := nodeAPI(ctx, "/stats/summary")
		if err != nil {
			return err
		}
		summary = statsapi.Summary{}
		if err := json.Unmarshal(data, &summary); err != nil {
			return err
		}
		for _, p := range summary.Pods {
			if p.PodRef.UID == string(pod.UID) {
				return nil
			}
		}
		return fmt.Errorf("pod %s is not among the summary's %d pods", pod.Name, len(summary.Pods))
	})
	checkPSI := func(what string, cpu *statsapi.CPUStats, memory *statsapi.MemoryStats, io *statsapi.IOStats) {
		t.Helper()
		if cpu == nil || cpu.PSI == nil {
			t.Errorf("%s has no CPU pressure: %+v", what, cpu)
		}
		if memory == nil || memory.PSI == nil {
			t.Errorf("%s has no memory pressure: %+v", what, memory)
		}
		if io == nil || io.PSI == nil {
			t.Errorf("%s has no IO pressure: %+v", what, io)
		}
	}
	checkPSI("the node", summary.Node.CPU, summary.Node.Memory, summary.Node.IO)
	for _, p := range summary.Pods {
		if p.PodRef.UID == string(pod.UID) {
			checkPSI("pod "+pod.Name, p.CPU, p.Memory, p.IO)
		}
	}
}

// nodeAPI GETs a path of the guest's node API as the API server does, with
// its kubelet client certificate, at the port forwarded to the guest. Not
// through the API server's node proxy: it refuses to proxy to a loopback
// address, the Node's here. The serving certificate is nodelet's
// self-signed one, which the API server does not check either.
func nodeAPI(ctx context.Context, path string) ([]byte, error) {
	cert, err := tls.LoadX509KeyPair(cluster.get("KUBELET_CLIENT_CERT"), cluster.get("KUBELET_CLIENT_KEY"))
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, //nolint:gosec // nodelet's self-signed serving certificate
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:"+cluster.get("NODELET_PORT")+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	return body, nil
}
