package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// Pure tables: no fakes, the pods and the Node are plain values.

// guaranteedPod limits what it requests.
func guaranteedPod(name string, kv ...string) *corev1.Pod {
	p := podAsking(name, kv...)
	p.Spec.Containers[0].Resources.Limits = p.Spec.Containers[0].Resources.Requests.DeepCopy()
	return p
}

func withPriority(pod *corev1.Pod, priority int32) *corev1.Pod {
	pod.Spec.Priority = ptr.To(priority)
	return pod
}

func critical(pod *corev1.Pod) *corev1.Pod { return withPriority(pod, 2000000000) }

// smallNode has 2 CPUs, 4Gi of memory and room for 3 pods.
func smallNode() *corev1.Node {
	n := roomyNode()
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("3"),
	}
	return n
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestAdmitCriticalPodPreempts(t *testing.T) {
	tests := map[string]struct {
		pod         *corev1.Pod
		admitted    []*corev1.Pod
		wantAdmit   bool
		wantReason  string
		wantMessage string
		wantPreempt []string
	}{
		"a critical pod that fits preempts nothing": {
			pod:       critical(podAsking("crit", "cpu", "1")),
			admitted:  []*corev1.Pod{podAsking("a", "cpu", "1")},
			wantAdmit: true,
		},
		"a pod that is not critical is refused, not made room for": {
			pod:        withPriority(podAsking("high", "cpu", "1500m"), 1000),
			admitted:   []*corev1.Pod{withPriority(podAsking("low", "cpu", "1"), 0)},
			wantReason: ReasonOutOfCPU,
		},
		"BestEffort pods go before Burstable ones, Guaranteed last": {
			pod: critical(podAsking("crit", "pods", "1")),
			admitted: []*corev1.Pod{
				guaranteedPod("guaranteed", "cpu", "100m", "memory", "100Mi"),
				podAsking("burstable", "cpu", "100m"),
				basePodNamed("besteffort"),
			},
			wantAdmit:   true,
			wantPreempt: []string{"besteffort"},
		},
		"the one pod that frees enough rather than several small ones": {
			pod: critical(podAsking("crit", "cpu", "1")),
			admitted: []*corev1.Pod{
				podAsking("small-1", "cpu", "300m"),
				podAsking("small-2", "cpu", "300m"),
				podAsking("big", "cpu", "1200m"),
			},
			wantAdmit:   true,
			wantPreempt: []string{"big"},
		},
		"between two pods that free enough, the one asking less memory": {
			pod: critical(podAsking("crit", "cpu", "1")),
			admitted: []*corev1.Pod{
				podAsking("more-memory", "cpu", "1", "memory", "2Gi"),
				podAsking("less-memory", "cpu", "1", "memory", "1Gi"),
			},
			wantAdmit:   true,
			wantPreempt: []string{"less-memory"},
		},
		"a Guaranteed pod is stopped only when the others cannot free enough": {
			pod: critical(podAsking("crit", "memory", "4Gi")),
			admitted: []*corev1.Pod{
				guaranteedPod("guaranteed", "cpu", "100m", "memory", "2Gi"),
				podAsking("burstable", "memory", "1Gi"),
			},
			wantAdmit:   true,
			wantPreempt: []string{"burstable", "guaranteed"},
		},
		"a Guaranteed pod that must go spares the lower pods it makes unneeded": {
			// 2Gi are needed; the Burstable pod's 1Gi is not enough, so the
			// Guaranteed pod goes, and its 2Gi are enough alone.
			pod: critical(podAsking("crit", "memory", "3Gi")),
			admitted: []*corev1.Pod{
				guaranteedPod("guaranteed", "cpu", "100m", "memory", "2Gi"),
				podAsking("burstable", "memory", "1Gi"),
			},
			wantAdmit:   true,
			wantPreempt: []string{"guaranteed"},
		},
		"critical pods are not preempted, and then nothing frees enough": {
			pod:         critical(podAsking("crit", "cpu", "1500m")),
			admitted:    []*corev1.Pod{critical(podAsking("other-critical", "cpu", "1"))},
			wantReason:  ReasonUnexpectedAdmissionError,
			wantMessage: "Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 500), ]",
		},
		"a critical pod refused for another reason than resources is refused for it": {
			pod: func() *corev1.Pod {
				p := critical(podAsking("crit", "cpu", "1500m"))
				p.Spec.NodeSelector = map[string]string{"zone": "elsewhere"}
				return p
			}(),
			admitted:   []*corev1.Pod{podAsking("a", "cpu", "1")},
			wantReason: ReasonNodeAffinity,
		},
		"a full pod count is made room for too": {
			pod:         critical(basePodNamed("crit")),
			admitted:    []*corev1.Pod{podAsking("a", "cpu", "100m"), basePodNamed("b"), podAsking("c", "cpu", "200m")},
			wantAdmit:   true,
			wantPreempt: []string{"b"},
		},
		"a mirror pod is critical whatever its priority": {
			pod: func() *corev1.Pod {
				p := podAsking("mirror", "cpu", "1500m")
				p.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
				return p
			}(),
			admitted:    []*corev1.Pod{podAsking("a", "cpu", "1")},
			wantAdmit:   true,
			wantPreempt: []string{"a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := admitOnNode(tc.pod, smallNode(), tc.admitted)
			if got.Admit != tc.wantAdmit || got.Reason != tc.wantReason {
				t.Fatalf("admit = %v, reason %q (%s); want %v, %q", got.Admit, got.Reason, got.Message, tc.wantAdmit, tc.wantReason)
			}
			if tc.wantMessage != "" && got.Message != tc.wantMessage {
				t.Errorf("message:\n got %q\nwant %q", got.Message, tc.wantMessage)
			}
			if diff := cmp.Diff(tc.wantPreempt, names(got.Preempt)); diff != "" {
				t.Errorf("preempted pods (-want +got):\n%s", diff)
			}
		})
	}
}

func basePodNamed(name string) *corev1.Pod {
	p := basePod()
	p.Name = name
	return p
}
