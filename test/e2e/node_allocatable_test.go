package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// waitForAllocatable waits until the Node's allocatable is capacity less
// reserved, for each resource of reserved (in bytes or millicores).
func (f *Framework) waitForAllocatable(t *testing.T, what string, reserved func(capacity corev1.ResourceList) map[corev1.ResourceName]int64) {
	t.Helper()
	await.Eventually(t, time.Minute, what, func(ctx context.Context) error {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var errs []error
		for name, want := range reserved(node.Status.Capacity) {
			capacity, allocatable := node.Status.Capacity[name], node.Status.Allocatable[name]
			got := capacity.Value() - allocatable.Value()
			if name == corev1.ResourceCPU {
				got = capacity.MilliValue() - allocatable.MilliValue()
			}
			if got != want {
				errs = append(errs, fmt.Errorf("%s: capacity %s, allocatable %s: %d kept, want %d", name, capacity.String(), allocatable.String(), got, want))
			}
		}
		return errors.Join(errs...)
	})
}

// percentOf is a percentage of a quantity as the kubelet takes it: a
// float32 fraction.
func percentOf(q resource.Quantity, percent float32) int64 {
	return int64(float64(q.Value()) * float64(percent/100))
}

// TestNodeAllocatableKeepsReservationsAndHardEvictionThresholds restarts
// nodelet with other flags, so it must run alone: it does not call
// t.Parallel (see main_test.go).
func TestNodeAllocatableKeepsReservationsAndHardEvictionThresholds(t *testing.T) {
	// The stack's first: the kubelet's memory threshold, the disk ones off
	// (hack/local-up.sh, as kind's).
	f.waitForAllocatable(t, "allocatable less the stack's eviction thresholds", func(c corev1.ResourceList) map[corev1.ResourceName]int64 {
		return map[corev1.ResourceName]int64{
			corev1.ResourceCPU:              0,
			corev1.ResourceMemory:           100 << 20,
			corev1.ResourceEphemeralStorage: 0,
			corev1.ResourcePods:             0,
		}
	})

	f.restartNodeletWith(t, "--system-reserved=cpu=100m,memory=100Mi", "--kube-reserved=cpu=200m,memory=200Mi,ephemeral-storage=1Gi",
		"--eviction-hard=memory.available<300Mi,nodefs.available<5%")
	f.waitForAllocatable(t, "allocatable less system-reserved, kube-reserved and the given thresholds", func(c corev1.ResourceList) map[corev1.ResourceName]int64 {
		return map[corev1.ResourceName]int64{
			corev1.ResourceCPU:              300,
			corev1.ResourceMemory:           600 << 20,
			corev1.ResourceEphemeralStorage: 1<<30 + percentOf(c[corev1.ResourceEphemeralStorage], 5),
			corev1.ResourcePods:             0,
		}
	})

	// The pods' cgroup is limited to the capacity less the reservations,
	// without the eviction thresholds, as the kubelet's under
	// --enforce-node-allocatable=pods.
	node, err := f.Client.CoreV1().Nodes().Get(t.Context(), f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cpu, memory := node.Status.Capacity.Cpu(), node.Status.Capacity.Memory()
	if !cgroupV2() {
		wantShares := strconv.FormatInt((cpu.MilliValue()-300)*1024/1000, 10)
		if got := f.cgroupFile(t, "kubepods", "cpu", "cpu.shares", ""); got != wantShares {
			t.Errorf("kubepods cpu.shares = %s, want %s for %s CPUs less 300m reserved", got, wantShares, cpu)
		}
	}
	// The kernel rounds the limit down to whole pages.
	page := int64(os.Getpagesize())
	wantMemory := strconv.FormatInt((memory.Value()-300<<20)/page*page, 10)
	if got := f.cgroupFile(t, "kubepods", "memory", "memory.limit_in_bytes", "memory.max"); got != wantMemory {
		t.Errorf("kubepods memory limit = %s, want %s: the node's memory %s less 300Mi reserved", got, wantMemory, memory)
	}
}

func TestNodeStatusListsTheImagesOfPods(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "listed").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	await.Eventually(t, time.Minute, "the node's status.images to list "+busyboxImage, func(ctx context.Context) error {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(node.Status.Images) > 50 {
			return fmt.Errorf("%d images listed, want at most 50", len(node.Status.Images))
		}
		for _, image := range node.Status.Images {
			if slices.Contains(image.Names, busyboxImage) {
				if image.SizeBytes <= 0 {
					return fmt.Errorf("image %v has size %d", image.Names, image.SizeBytes)
				}
				return nil
			}
		}
		return fmt.Errorf("images %v", node.Status.Images)
	})
}
