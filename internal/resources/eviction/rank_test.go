package eviction

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Pure tests: pods and their usage are values.

func rankPod(name string, priority int32, memoryRequest string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name)},
		Spec: corev1.PodSpec{
			Priority:   ptr.To(priority),
			Containers: []corev1.Container{{Name: "c"}},
		},
	}
	if memoryRequest != "" {
		pod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memoryRequest)}
	}
	return pod
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestRank(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal Signal
		pods   []*corev1.Pod
		usage  Usage
		want   []string
	}{
		{
			name:   "memory: over requests before priority",
			signal: SignalMemoryAvailable,
			pods:   []*corev1.Pod{rankPod("low-priority-within", 0, "500Mi"), rankPod("high-priority-over", 1000, "100Mi")},
			usage: Usage{
				"low-priority-within": {Memory: quantity("400Mi")},
				"high-priority-over":  {Memory: quantity("200Mi")},
			},
			want: []string{"high-priority-over", "low-priority-within"},
		},
		{
			name:   "memory: then lower priority",
			signal: SignalMemoryAvailable,
			pods:   []*corev1.Pod{rankPod("high", 1000, ""), rankPod("low", 0, "")},
			usage:  Usage{"high": {Memory: quantity("900Mi")}, "low": {Memory: quantity("10Mi")}},
			want:   []string{"low", "high"},
		},
		{
			name:   "memory: then the most above requests",
			signal: SignalAllocatableMemoryAvailable,
			pods:   []*corev1.Pod{rankPod("small", 0, "100Mi"), rankPod("big", 0, "")},
			usage:  Usage{"small": {Memory: quantity("300Mi")}, "big": {Memory: quantity("250Mi")}},
			want:   []string{"big", "small"},
		},
		{
			name:   "a pod not measured goes first",
			signal: SignalMemoryAvailable,
			pods:   []*corev1.Pod{rankPod("measured", 0, ""), rankPod("unmeasured", 1000, "")},
			usage:  Usage{"measured": {Memory: quantity("1Gi")}},
			want:   []string{"unmeasured", "measured"},
		},
		{
			name:   "disk: the most above the ephemeral storage request",
			signal: SignalNodeFsAvailable,
			pods:   []*corev1.Pod{rankPod("a", 0, ""), rankPod("b", 0, "")},
			usage:  Usage{"a": {EphemeralStorage: quantity("1Gi")}, "b": {EphemeralStorage: quantity("2Gi")}},
			want:   []string{"b", "a"},
		},
		{
			name:   "pid: lower priority, then the most processes",
			signal: SignalPIDAvailable,
			pods:   []*corev1.Pod{rankPod("few", 0, ""), rankPod("many-high", 10, ""), rankPod("many", 0, "")},
			usage:  Usage{"few": {Processes: ptr.To[int64](2)}, "many-high": {Processes: ptr.To[int64](500)}, "many": {Processes: ptr.To[int64](100)}},
			want:   []string{"many", "few", "many-high"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Rank(tc.signal, tc.pods, tc.usage)
			if diff := cmp.Diff(tc.want, names(tc.pods)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMessage(t *testing.T) {
	at := time.Unix(100, 0)
	pod := rankPod("hog", 0, "")
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "quiet", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")}}})
	pod.Spec.Containers[0].Name = "x"
	usage := Usage{"hog": {Memory: quantity("320Mi"), Containers: []ContainerUsage{
		{Name: "x", Memory: quantity("300Mi")},
		{Name: "quiet", Memory: quantity("20Mi")},
	}}}
	thresholds := []Threshold{{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("100Mi")}}}
	obs := Observations{SignalMemoryAvailable: observe("45Mi", "4Gi", at)}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 45Mi. Container x was using 300Mi, request is 0, has larger consumption of memory. "
	if got := Message(corev1.ResourceMemory, pod, usage, thresholds, obs); got != want {
		t.Errorf("Message() =\n%q\nwant\n%q", got, want)
	}
	// A pod not measured is told only of the node.
	if got, want := Message(corev1.ResourceMemory, rankPod("other", 0, ""), usage, thresholds, obs), "The node was low on resource: memory. Threshold quantity: 100Mi, available: 45Mi. "; got != want {
		t.Errorf("Message() of an unmeasured pod = %q, want %q", got, want)
	}
}

func TestGracePeriodSeconds(t *testing.T) {
	pod := rankPod("p", 0, "")
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	hard := Threshold{Signal: SignalMemoryAvailable}
	soft := Threshold{Signal: SignalMemoryAvailable, GracePeriod: time.Minute}
	for _, tc := range []struct {
		name      string
		threshold Threshold
		max       int64
		want      int64
	}{
		{name: "hard: immediate", threshold: hard, max: 60, want: 1},
		{name: "soft: the pod's within the maximum", threshold: soft, max: 60, want: 30},
		{name: "soft: the maximum bounds the pod's", threshold: soft, max: 10, want: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GracePeriodSeconds(tc.threshold, pod, tc.max); got != tc.want {
				t.Errorf("GracePeriodSeconds() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEvictable(t *testing.T) {
	if !Evictable(rankPod("user", 1000, "")) {
		t.Errorf("a user pod is not evictable")
	}
	if Evictable(rankPod("critical", 2000000000, "")) {
		t.Errorf("a system-critical pod is evictable")
	}
}
