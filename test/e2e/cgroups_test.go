package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/resources"
)

// cgroupV2 is true on a host with the unified hierarchy alone.
func cgroupV2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// cgroupFile reads a control file of a cgroup under nodelet's root: the
// v1 file in its controller's hierarchy, or the v2 one.
func (f *Framework) cgroupFile(t *testing.T, cgroup, controller, v1File, v2File string) string {
	t.Helper()
	path := filepath.Join(f.hostCgroupDir(controller, cgroup), v1File)
	if cgroupV2() {
		path = filepath.Join(f.hostCgroupDir("", cgroup), v2File)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return strings.TrimSpace(string(data))
}

// The pod's cgroup sits in its QoS class's tier and carries the limits
// the kubelet would give it; its containers run inside it.
func TestPodCgroupsFollowTheQOSClass(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	const unlimitedV1 = "9223372036854771712"
	tests := []struct {
		name      string
		resources corev1.ResourceRequirements
		class     corev1.PodQOSClass
		tier      string
		// v1 and v2 values of the pod cgroup's files.
		shares, quota, memory  string
		weight, cpuMax, memMax string
	}{
		{
			name: "guaranteed", resources: resources.Requirements("cpu=200m,memory=64Mi", "cpu=200m,memory=64Mi"),
			class: corev1.PodQOSGuaranteed, tier: "kubepods",
			shares: "204", quota: "20000", memory: "67108864",
			weight: "8", cpuMax: "20000 100000", memMax: "67108864",
		},
		{
			name: "burstable", resources: resources.Requirements("cpu=100m,memory=32Mi", "cpu=300m,memory=96Mi"),
			class: corev1.PodQOSBurstable, tier: "kubepods/burstable",
			shares: "102", quota: "30000", memory: "100663296",
			weight: "4", cpuMax: "30000 100000", memMax: "100663296",
		},
		{
			name: "besteffort", class: corev1.PodQOSBestEffort, tier: "kubepods/besteffort",
			shares: "2", quota: "-1", memory: unlimitedV1,
			weight: "1", cpuMax: "max 100000", memMax: "max",
		},
	}
	pods := map[string]*corev1.Pod{}
	for _, tc := range tests {
		pod := newPod(ns, tc.name).obj()
		pod.Spec.Containers[0].Resources = tc.resources
		pods[tc.name] = f.createPod(t, pod)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := f.waitForPod(t, pods[tc.name], podStartTimeout, "to be Running and Ready", runningAndReady)
			if pod.Status.QOSClass != tc.class {
				t.Fatalf("status.qosClass = %s, want %s", pod.Status.QOSClass, tc.class)
			}
			cgroup := filepath.Join(tc.tier, "pod"+string(pod.UID))
			check := func(controller, v1File, v2File, v1Want, v2Want string) {
				t.Helper()
				want := v1Want
				if cgroupV2() {
					want = v2Want
				}
				if got := f.cgroupFile(t, cgroup, controller, v1File, v2File); got != want {
					t.Errorf("%s of the pod cgroup %s = %q, want %q", map[bool]string{false: v1File, true: v2File}[cgroupV2()], cgroup, got, want)
				}
			}
			check("cpu", "cpu.shares", "cpu.weight", tc.shares, tc.weight)
			if cgroupV2() {
				check("cpu", "", "cpu.max", "", tc.cpuMax)
			} else {
				check("cpu", "cpu.cfs_quota_us", "", tc.quota, "")
			}
			check("memory", "memory.limit_in_bytes", "memory.max", tc.memory, tc.memMax)
			// The default --pod-max-pids leaves the processes unlimited.
			check("pids", "pids.max", "pids.max", "max", "max")

			// The container is in the pod's cgroup, as its own view shows.
			self := f.execInContainer(t, pod, "app", "cat", "/proc/self/cgroup")
			if !cgroupV2() {
				want := f.cgroupPath(cgroup) + "/"
				var cpuLine string
				for _, line := range strings.Split(self, "\n") {
					if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && strings.Contains(","+parts[1]+",", ",cpu,") {
						cpuLine = line
					}
				}
				if !strings.Contains(cpuLine, want) {
					t.Errorf("the container's cpu cgroup %q is not inside %s", cpuLine, want)
				}
			}
			// And the runtime made the container's cgroup inside it.
			container := filepath.Join(cgroup, containerID(t, pod, "app"))
			dir := f.hostCgroupDir("memory", container)
			if cgroupV2() {
				dir = f.hostCgroupDir("", container)
			}
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("the container's cgroup is not in the pod's: %v", err)
			}
		})
	}
}

// A container that allocates past its memory limit is killed by the
// kernel, and the pod says so.
func TestContainerPastItsMemoryLimitIsOOMKilled(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// tail keeps the line it reads whole, and /dev/zero has no end of line.
	pod := newPod(ns, "hog").withCommand("tail", "/dev/zero").withRestartPolicy(corev1.RestartPolicyNever).obj()
	pod.Spec.Containers[0].Resources = resources.Requirements("memory=16Mi", "memory=16Mi")
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to fail", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	s := containerStatus(pod, "app")
	if s == nil || s.State.Terminated == nil {
		t.Fatalf("container app did not terminate: %s", describePod(pod))
	}
	if term := s.State.Terminated; term.Reason != "OOMKilled" || term.ExitCode != 137 {
		t.Errorf("container app terminated with reason %q, exit code %d; want OOMKilled, 137", term.Reason, term.ExitCode)
	}
}

// TestQOSTiersAndPodPidsLimit restarts nodelet with --pod-max-pids, so it
// runs alone: it does not call t.Parallel (see main_test.go).
func TestQOSTiersAndPodPidsLimit(t *testing.T) {
	f.restartNodeletWith(t, "--pod-max-pids=64")
	ns := f.NewNamespace(t)
	pod := newPod(ns, "small").obj()
	pod.Spec.Containers[0].Resources = resources.Requirements("cpu=150m", "")
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	t.Run("the pod's processes are limited", func(t *testing.T) {
		cgroup := filepath.Join("kubepods/burstable", "pod"+string(pod.UID))
		if got := f.cgroupFile(t, cgroup, "pids", "pids.max", "pids.max"); got != "64" {
			t.Errorf("pids.max of the pod cgroup = %q, want 64", got)
		}
	})

	t.Run("besteffort has the least CPU weight", func(t *testing.T) {
		want := "2"
		if cgroupV2() {
			want = "1"
		}
		if got := f.cgroupFile(t, "kubepods/besteffort", "cpu", "cpu.shares", "cpu.weight"); got != want {
			t.Errorf("besteffort's CPU weight = %q, want %q", got, want)
		}
	})

	t.Run("burstable weighs what its pods ask for", func(t *testing.T) {
		// Pods of other tests may still be going: the tier follows the
		// node's Burstable pods as they are now.
		await.Eventually(t, 60*time.Second, "the burstable tier's shares to be its pods' requests", func(ctx context.Context) error {
			pods, err := f.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + f.Env.NodeName})
			if err != nil {
				return err
			}
			var milli int64
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.Status.QOSClass != corev1.PodQOSBurstable || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
					continue
				}
				for _, c := range p.Spec.Containers {
					milli += c.Resources.Requests.Cpu().MilliValue()
				}
			}
			shares := max(milli*1024/1000, 2)
			want := strconv.FormatInt(shares, 10)
			if cgroupV2() {
				want = strconv.FormatInt(1+(shares-2)*9999/262142, 10)
			}
			if got := f.cgroupFile(t, "kubepods/burstable", "cpu", "cpu.shares", "cpu.weight"); got != want {
				return fmt.Errorf("burstable's CPU weight is %s, want %s for %dm of requests", got, want, milli)
			}
			return nil
		})
	})

	t.Run("kubepods is limited to the node's capacity", func(t *testing.T) {
		node, err := f.Client.CoreV1().Nodes().Get(t.Context(), f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cpu, memory := node.Status.Capacity.Cpu(), node.Status.Capacity.Memory()
		wantShares := strconv.FormatInt(cpu.MilliValue()*1024/1000, 10)
		if !cgroupV2() {
			if got := f.cgroupFile(t, "kubepods", "cpu", "cpu.shares", ""); got != wantShares {
				t.Errorf("kubepods cpu.shares = %s, want %s for %s CPUs", got, wantShares, cpu)
			}
		}
		// The kernel rounds the limit down to whole pages.
		page := int64(os.Getpagesize())
		wantMemory := strconv.FormatInt(memory.Value()/page*page, 10)
		if got := f.cgroupFile(t, "kubepods", "memory", "memory.limit_in_bytes", "memory.max"); got != wantMemory {
			t.Errorf("kubepods memory limit = %s, want the node's memory %s", got, wantMemory)
		}
	})
}

// A pod cgroup an older nodelet made right under the root, whose pod is
// gone, is found and removed like any other pod's.
func TestPodCgroupOfTheOldLayoutIsRemoved(t *testing.T) {
	t.Parallel()
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "0ld1ay0u7-" + types.UID(strconv.FormatInt(time.Now().UnixNano(), 36))}}
	var dirs []string
	if cgroupV2() {
		dirs = []string{filepath.Join("/sys/fs/cgroup", f.Env.CgroupRoot, "pod"+string(gone.UID))}
	} else {
		for _, controller := range []string{"cpu", "memory", "pids"} {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", controller, f.Env.CgroupRoot, "pod"+string(gone.UID)))
		}
	}
	for _, dir := range dirs {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatalf("making an old layout's pod cgroup: %v", err)
		}
		t.Cleanup(func() { _ = os.Remove(dir) })
	}
	await.Eventually(t, 90*time.Second, "housekeeping to remove the old layout's pod cgroup", func(context.Context) error {
		if left := f.podCgroups(gone); len(left) > 0 {
			return fmt.Errorf("still there: %v", left)
		}
		return nil
	})
}
