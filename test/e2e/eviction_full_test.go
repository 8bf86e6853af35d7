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

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestEvictionUnderMemoryPressure restarts nodelet with other flags, so it
// must run alone: it does not call t.Parallel (see main_test.go). A
// BestEffort pod fills a memory-backed emptyDir past a hard
// memory.available threshold set just under what the host has: it is
// evicted as the kubelet evicts, a Guaranteed pod beside it runs on, and
// the Node's MemoryPressure comes and goes with the transition period.
func TestEvictionUnderMemoryPressure(t *testing.T) {
	ns := f.NewNamespace(t)
	bystander := newPod(ns, "bystander").obj()
	bystander.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	bystander = f.createPod(t, bystander)
	f.waitForPod(t, bystander, time.Minute, "running and ready", runningAndReady)

	// Set just before the hog starts, with a margin against what the rest
	// of the host does meanwhile: the hog's 1Gi crosses it, 500Mi of
	// noise does not.
	const hogBytes, margin = 1 << 30, 500 << 20
	threshold := hostMemoryAvailable(t) - margin
	f.restartNodeletWith(t, fmt.Sprintf("--eviction-hard=memory.available<%d", threshold), "--eviction-pressure-transition-period=10s")

	hog := newPod(ns, "hog").withShell(fmt.Sprintf("dd if=/dev/zero of=/fill/zero bs=1M count=%d && sleep 3600", hogBytes>>20)).obj()
	hog.Spec.Containers[0].Name = "hog"
	hog.Spec.Volumes = []corev1.Volume{{Name: "fill", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	hog.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "fill", MountPath: "/fill"}}
	hog = f.createPod(t, hog)

	await.Eventually(t, 2*time.Minute, "MemoryPressure true", func(ctx context.Context) error {
		c, err := f.nodeCondition(ctx, corev1.NodeMemoryPressure)
		if err != nil {
			return err
		}
		if c.Status != corev1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" || c.Message != "kubelet has insufficient memory available" {
			return fmt.Errorf("MemoryPressure is %s %s %q", c.Status, c.Reason, c.Message)
		}
		return nil
	})
	f.waitForNodeEvents(t, 30*time.Second, "NodeHasInsufficientMemory")
	evicted := f.waitForPod(t, hog, 2*time.Minute, "Failed, Evicted", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	if evicted.Status.Reason != "Evicted" || !evictionMessage.MatchString(evicted.Status.Message) {
		t.Errorf("evicted pod's status: reason %q message %q, want Evicted and %v", evicted.Status.Reason, evicted.Status.Message, evictionMessage)
	}
	var disruption *corev1.PodCondition
	for i := range evicted.Status.Conditions {
		if evicted.Status.Conditions[i].Type == corev1.DisruptionTarget {
			disruption = &evicted.Status.Conditions[i]
		}
	}
	if disruption == nil || disruption.Status != corev1.ConditionTrue || disruption.Reason != corev1.PodReasonTerminationByKubelet {
		t.Errorf("evicted pod's DisruptionTarget condition: %+v, want True TerminationByKubelet", disruption)
	}
	f.waitForEvent(t, hog, "Evicted", "The node was low on resource: memory.", 30*time.Second)

	// The hog's memory went with its volume: the pressure ends once the
	// transition period has passed, and the bystander never stopped.
	await.Eventually(t, 2*time.Minute, "MemoryPressure false again", func(ctx context.Context) error {
		c, err := f.nodeCondition(ctx, corev1.NodeMemoryPressure)
		if err != nil {
			return err
		}
		if c.Status != corev1.ConditionFalse || c.Reason != "KubeletHasSufficientMemory" {
			return fmt.Errorf("MemoryPressure is %s %s", c.Status, c.Reason)
		}
		return nil
	})
	current, err := f.Client.CoreV1().Pods(ns).Get(t.Context(), bystander.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ready, _ := runningAndReady(current); !ready || current.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("bystander: %s, want running with no restart", describePod(current))
	}
}
