package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/resources/admission"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// PodConfig starts as ResourceConfigForPod's when the pod's cgroup is
// made, then follows what resizes wrote.
func (c *fakeCgroups) PodConfig(pod *corev1.Pod) (*cgroups.ResourceConfig, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	config := c.config
	return &config, nil
}
func (c *fakeCgroups) SetPodConfig(pod *corev1.Pod, config *cgroups.ResourceConfig) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, *config)
	if config.CPUShares != nil {
		c.config.CPUShares = config.CPUShares
	}
	if config.CPUQuota != nil {
		c.config.CPUQuota = config.CPUQuota
	}
	if config.Memory != nil {
		c.config.Memory = config.Memory
	}
	return nil
}

func sizedPod(namespace, name, cpu, memory string) *corev1.Pod {
	pod := testPod(namespace, name)
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
	}
	return pod
}

// resize asks for new resources through the pods/resize subresource, as
// kubectl's --subresource=resize does.
func (e *reconcilerEnv) resize(t *testing.T, pod *corev1.Pod, cpu, memory string) {
	t.Helper()
	current := &corev1.Pod{}
	if err := e.client.Get(context.Background(), client.ObjectKeyFromObject(pod), current); err != nil {
		t.Fatal(err)
	}
	current.Spec.Containers[0].Resources = sizedPod("", "", cpu, memory).Spec.Containers[0].Resources
	if err := e.client.SubResource("resize").Update(context.Background(), current); err != nil {
		t.Fatalf("resizing pod %s: %v", pod.Name, err)
	}
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func (e *reconcilerEnv) hasEvent(prefix string) bool {
	return slices.ContainsFunc(e.recordedEvents(), func(ev string) bool { return strings.HasPrefix(ev, prefix) })
}

// Over envtest's API server and the CRI fake: a resize the node accepts is
// applied in place, and one it defers changes nothing.
func TestPodResize(t *testing.T) {
	var deferAll bool
	env := startReconcilerWith(t, func(r *PodReconciler) {
		r.AdmitResize = func(desired, allocated *corev1.Pod, node *corev1.Node, others []*corev1.Pod) admission.ResizeResult {
			if deferAll {
				return admission.ResizeResult{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"}
			}
			return admission.ResizeResult{Accepted: true}
		}
	})
	env.createNamespace(t, "resize")
	// The API server checks a resize against the pod's Node.
	env.createNode(t, memoryNode("4Gi"))

	pod := sizedPod("resize", "grows", "100m", "64Mi")
	if err := env.client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	before := env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
	env.resize(t, pod, "200m", "128Mi")
	want := sizedPod("", "", "200m", "128Mi").Spec.Containers[0].Resources
	env.waitForPod(t, client.ObjectKeyFromObject(pod), "the resize applied", func(p *corev1.Pod) error {
		if err := running(p); err != nil {
			return err
		}
		cs := p.Status.ContainerStatuses[0]
		if !equality.Semantic.DeepEqual(cs.AllocatedResources, want.Requests) {
			return fmt.Errorf("allocatedResources %v", cs.AllocatedResources)
		}
		if c := condition(p, corev1.PodResizeInProgress); c != nil {
			return fmt.Errorf("still %s: %s", c.Type, c.Message)
		}
		if c := condition(p, corev1.PodResizePending); c != nil {
			return fmt.Errorf("%s %s: %s", c.Type, c.Reason, c.Message)
		}
		if cs.ContainerID != before.Status.ContainerStatuses[0].ContainerID || cs.RestartCount != 0 {
			return fmt.Errorf("the container was restarted: %s, restartCount %d", cs.ContainerID, cs.RestartCount)
		}
		if !env.hasEvent("Normal ResizeCompleted Pod resize completed") {
			return fmt.Errorf("no ResizeCompleted event yet: %v", env.recordedEvents())
		}
		return nil
	})
	if !slices.Contains(env.runtime.GetCalls(), "UpdateContainerResources") {
		t.Error("the container was not updated through CRI")
	}
	if !env.hasEvent("Normal ResizeStarted Pod resize started: {") {
		t.Errorf("no ResizeStarted event: %v", env.recordedEvents())
	}
	env.cgroups.mu.Lock()
	shares, memory := env.cgroups.config.CPUShares, env.cgroups.config.Memory
	env.cgroups.mu.Unlock()
	if shares == nil || *shares != cgroups.MilliCPUToShares(200) || memory == nil || *memory != 128<<20 {
		t.Errorf("pod cgroup shares %v memory %v, want %d and %d", shares, memory, cgroups.MilliCPUToShares(200), 128<<20)
	}

	deferAll = true
	env.resize(t, pod, "300m", "128Mi")
	env.waitForPod(t, client.ObjectKeyFromObject(pod), "the resize deferred", func(p *corev1.Pod) error {
		c := condition(p, corev1.PodResizePending)
		if c == nil || c.Reason != corev1.PodReasonDeferred || c.Message != "Node didn't have enough resource: cpu" || c.ObservedGeneration != p.Generation {
			return fmt.Errorf("PodResizePending %+v", c)
		}
		if got := p.Status.ContainerStatuses[0].AllocatedResources; !equality.Semantic.DeepEqual(got, want.Requests) {
			return fmt.Errorf("allocatedResources %v changed", got)
		}
		return nil
	})
	// The condition says Deferred; the event, as the kubelet's, the
	// admission check's own reason.
	if !env.hasEvent("Warning ResizeDeferred Pod resize OutOfcpu: {") {
		t.Errorf("no ResizeDeferred event: %v", env.recordedEvents())
	}
}
