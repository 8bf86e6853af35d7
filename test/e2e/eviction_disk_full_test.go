//go:build full

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestEvictionUnderDiskPressure restarts nodelet with other flags, so it
// must run alone: it does not call t.Parallel (see main_test.go). On the
// node's own small file system, a hard nodefs.available threshold is set
// just under its free space and a BestEffort pod fills its writable
// layer past it. nodelet reclaims first, as the kubelet does: the dead
// container of a finished pod, then the image only that container used,
// and evicts no pod in that round; then it evicts the filler with the
// kubelet's message, leaves a bystander within its request alone, and
// the Node's DiskPressure comes and goes.
func TestEvictionUnderDiskPressure(t *testing.T) {
	ns := f.NewNamespace(t)
	f.nodeDisk(t)
	images, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(f.Env.CRIEndpoint).WithConnectionTimeout(30 * time.Second).Build(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	bystander := newPod(ns, "bystander").obj()
	bystander.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("100Mi")},
	}
	bystander = f.createPod(t, bystander)
	// A finished pod, still in the API, whose dead container is the only
	// user of an image of its own.
	unused := f.pushImageVariant(t, "disk-gc-target", ns)
	done := f.createPod(t, newPod(ns, "done").withImage(unused).withCommand("true").withRestartPolicy(corev1.RestartPolicyNever).obj())
	f.waitForPod(t, bystander, podStartTimeout, "running and ready", runningAndReady)
	f.waitForPod(t, done, podStartTimeout, "Succeeded", func(p *corev1.Pod) (bool, error) { return p.Status.Phase == corev1.PodSucceeded, nil })
	if len(f.runtimeContainers(t, done.UID, "")) == 0 || !hasImage(t, images, unused) {
		t.Fatalf("the finished pod's container or its image %s is not in the runtime", unused)
	}

	// Just under the free space, with a margin for what the stack writes
	// meanwhile: the filler's 800Mi cross it, 300Mi of noise does not.
	const fillBytes, margin = 800 << 20, 300 << 20
	threshold := f.nodeDisk(t) - margin
	f.restartNodeletWith(t, fmt.Sprintf("--eviction-hard=nodefs.available<%d", threshold),
		"--eviction-pressure-transition-period=10s", "--image-minimum-gc-age=0s")

	filler := newPod(ns, "filler").withShell(fmt.Sprintf("dd if=/dev/zero of=/fill bs=1M count=%d && sleep 3600", fillBytes>>20)).obj()
	filler.Spec.Containers[0].Name = "filler"
	filler = f.createPod(t, filler)

	diskPressure := func(status corev1.ConditionStatus, reason, message string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			c, err := f.nodeCondition(ctx, corev1.NodeDiskPressure)
			if err != nil {
				return err
			}
			if c.Status != status || c.Reason != reason || c.Message != message {
				return fmt.Errorf("DiskPressure is %s %s %q", c.Status, c.Reason, c.Message)
			}
			return nil
		}
	}
	underPressure := diskPressure(corev1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure")

	// What goes, in what order: the dead container and the image before
	// the filler fails, seen in one poll while it still runs; DiskPressure
	// on the Node meanwhile.
	var reclaimedBeforeEviction, pressureSeen bool
	var evicted *corev1.Pod
	await.Eventually(t, 4*time.Minute, "the finished pod's container and image removed, then the filler evicted", func(ctx context.Context) error {
		pressureSeen = pressureSeen || underPressure(ctx) == nil
		current, err := f.Client.CoreV1().Pods(ns).Get(ctx, filler.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		containers, err := f.listContainers(ctx, done.UID, "")
		if err != nil {
			return err
		}
		list, err := images.ListImages(ctx, nil)
		if err != nil {
			return err
		}
		imageThere := false
		for _, image := range list {
			for _, tag := range image.RepoTags {
				imageThere = imageThere || tag == unused
			}
		}
		reclaimed := len(containers) == 0 && !imageThere
		if current.Status.Phase != corev1.PodFailed {
			reclaimedBeforeEviction = reclaimedBeforeEviction || reclaimed
			return fmt.Errorf("filler is %s; the finished pod has %d containers, image there: %v", current.Status.Phase, len(containers), imageThere)
		}
		if !reclaimed {
			return fmt.Errorf("filler failed while the finished pod has %d containers, image there: %v", len(containers), imageThere)
		}
		evicted = current
		return nil
	})
	if !reclaimedBeforeEviction {
		t.Errorf("the filler was evicted before the finished pod's container and image were seen removed")
	}
	if evicted.Status.Reason != "Evicted" || !diskEvictionMessage.MatchString(evicted.Status.Message) {
		t.Errorf("evicted pod's status: reason %q message %q, want Evicted and %v", evicted.Status.Reason, evicted.Status.Message, diskEvictionMessage)
	}
	f.waitForEvent(t, filler, "Evicted", "The node was low on resource: ephemeral-storage.", 30*time.Second)
	if sandboxes := f.runtimeSandboxes(t, done.UID); len(sandboxes) != 0 {
		t.Errorf("the finished pod still has %d sandboxes", len(sandboxes))
	}

	if !pressureSeen {
		// The Node's status may be written after the eviction; the
		// pressure lasts at least the transition period past it.
		await.Eventually(t, 30*time.Second, "DiskPressure true", underPressure)
	}
	// Its event, with the kubelet's reason and message.
	f.waitForNodeEvents(t, 30*time.Second, "NodeHasDiskPressure")
	// The evicted filler's container goes as a finished pod's, its layer
	// with it: the pressure ends, and the bystander was never touched.
	await.Eventually(t, 3*time.Minute, "DiskPressure false again", diskPressure(corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"))
	current, err := f.Client.CoreV1().Pods(ns).Get(t.Context(), bystander.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ready, _ := runningAndReady(current); !ready || current.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("bystander: %s, want running with no restart", describePod(current))
	}
	if free := f.nodeDisk(t); free < threshold {
		t.Errorf("the node's disk has %d bytes free after the eviction, under the threshold %d", free, threshold)
	}
}
