package admission

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// roomyNode has room for every pod of the tests that do not fill it, the
// labels the affinity cases match, and no taints.
func roomyNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
			"kubernetes.io/hostname": "node-a", "zone": "z1", "disk": "ssd", "cores": "8",
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("2"),
			corev1.ResourceMemory:           resource.MustParse("4Gi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("10Gi"),
			corev1.ResourcePods:             resource.MustParse("3"),
			"example.com/gpu":               resource.MustParse("2"),
			"hugepages-2Mi":                 resource.MustParse("0"),
		}},
	}
}

func requests(kv ...string) corev1.ResourceRequirements {
	list := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		list[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return corev1.ResourceRequirements{Requests: list}
}

// podAsking is a pod whose one container asks for the given requests.
func podAsking(name string, kv ...string) *corev1.Pod {
	p := basePod()
	p.Name = name
	p.Spec.Containers[0].Resources = requests(kv...)
	return p
}

func outOf(name string, requested, used, capacity int64) Result {
	return insufficientResource{name: corev1.ResourceName(name), requested: requested, used: used, capacity: capacity}.result()
}

func TestAdmitResources(t *testing.T) {
	admitted := Result{Admit: true}
	always := corev1.ContainerRestartPolicyAlways
	tests := map[string]struct {
		pod   *corev1.Pod
		other []*corev1.Pod
		want  Result
	}{
		"a pod asking nothing fits":                                         {pod: basePod(), want: admitted},
		"a pod asking all the CPU left fits":                                {pod: podAsking("p", "cpu", "1500m"), other: []*corev1.Pod{podAsking("o", "cpu", "500m")}, want: admitted},
		"a pod asking more CPU than is left":                                {pod: podAsking("p", "cpu", "1501m"), other: []*corev1.Pod{podAsking("o", "cpu", "500m")}, want: outOf("cpu", 1501, 500, 2000)},
		"a pod asking more CPU than the node":                               {pod: podAsking("p", "cpu", "3"), want: outOf("cpu", 3000, 0, 2000)},
		"memory is counted in bytes":                                        {pod: podAsking("p", "memory", "3Gi"), other: []*corev1.Pod{podAsking("o", "memory", "1025Mi")}, want: outOf("memory", 3<<30, 1025<<20, 4<<30)},
		"ephemeral storage":                                                 {pod: podAsking("p", "ephemeral-storage", "11Gi"), want: outOf("ephemeral-storage", 11<<30, 0, 10<<30)},
		"the pod count is judged first":                                     {pod: podAsking("p", "cpu", "3"), other: []*corev1.Pod{basePod(), basePod(), basePod()}, want: outOf("pods", 1, 3, 3)},
		"CPU is judged before memory":                                       {pod: podAsking("p", "cpu", "3", "memory", "5Gi"), want: outOf("cpu", 3000, 0, 2000)},
		"an extended resource the node has":                                 {pod: podAsking("p", "example.com/gpu", "1"), other: []*corev1.Pod{podAsking("o", "example.com/gpu", "1")}, want: admitted},
		"an extended resource used up":                                      {pod: podAsking("p", "example.com/gpu", "2"), other: []*corev1.Pod{podAsking("o", "example.com/gpu", "1")}, want: Result{Reason: "OutOfexample.com/gpu", Message: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 1, capacity: 2"}},
		"an extended resource the node lacks is not the kubelet's to check": {pod: podAsking("p", "example.com/fpga", "1"), want: admitted},
		"hugepages the node lacks are":                                      {pod: podAsking("p", "hugepages-2Mi", "4Mi", "memory", "4Mi"), want: outOf("hugepages-2Mi", 4<<20, 0, 0)},
		"limits alone count as requests (the API server defaults them)": {pod: func() *corev1.Pod {
			p := basePod()
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
			}
			return p
		}(), want: outOf("cpu", 3000, 0, 2000)},
		"an init container's peak above the app's counts": {pod: func() *corev1.Pod {
			p := podAsking("p", "cpu", "500m")
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: requests("cpu", "2500m")}}
			return p
		}(), want: outOf("cpu", 2500, 0, 2000)},
		"an init container below the apps' sum does not": {pod: func() *corev1.Pod {
			p := podAsking("p", "cpu", "1")
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c2", Resources: requests("cpu", "1")})
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: requests("cpu", "1500m")}}
			return p
		}(), other: []*corev1.Pod{podAsking("o", "cpu", "1m")}, want: outOf("cpu", 2000, 1, 2000)},
		"a sidecar adds to the apps and to the init containers after it": {pod: func() *corev1.Pod {
			p := podAsking("p", "cpu", "1")
			p.Spec.InitContainers = []corev1.Container{
				{Name: "side", RestartPolicy: &always, Resources: requests("cpu", "600m")},
				{Name: "init", Resources: requests("cpu", "1500m")},
			}
			return p
		}(), want: outOf("cpu", 2100, 0, 2000)},
		"a sidecar after an init container does not add to it": {pod: func() *corev1.Pod {
			p := podAsking("p", "cpu", "1")
			p.Spec.InitContainers = []corev1.Container{
				{Name: "init", Resources: requests("cpu", "1900m")},
				{Name: "side", RestartPolicy: &always, Resources: requests("cpu", "600m")},
			}
			return p
		}(), want: admitted},
		"the pod's overhead adds": {pod: func() *corev1.Pod {
			p := podAsking("p", "memory", "4Gi")
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}
			return p
		}(), want: outOf("memory", 4<<30+1<<20, 0, 4<<30)},
		"an admitted pod's overhead counts too": {pod: podAsking("p", "memory", "4Gi"), other: []*corev1.Pod{func() *corev1.Pod {
			p := basePod()
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}
			return p
		}()}, want: outOf("memory", 4<<30, 1<<20, 4<<30)},
		"pod-level requests replace the containers'": {pod: func() *corev1.Pod {
			p := podAsking("p", "cpu", "100m")
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2100m")}}
			return p
		}(), want: outOf("cpu", 2100, 0, 2000)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := New(Node{OS: "linux"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, a.Admit(tc.pod, roomyNode(), tc.other)); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmitNodeAffinity(t *testing.T) {
	refused := Result{Reason: "NodeAffinity", Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"}
	admitted := Result{Admit: true}
	required := func(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
			}}
		}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	tests := map[string]struct {
		mutate func(*corev1.Pod)
		want   Result
	}{
		"a nodeSelector the node's labels match": {want: admitted,
			mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "z1", "disk": "ssd"} }},
		"a nodeSelector one label of which differs": {want: refused,
			mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "z1", "disk": "hdd"} }},
		"a nodeSelector naming a label the node lacks": {want: refused,
			mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"gpu": "true"} }},
		"In":           {want: admitted, mutate: required(expr("zone", corev1.NodeSelectorOpIn, "z0", "z1"))},
		"In, no value": {want: refused, mutate: required(expr("zone", corev1.NodeSelectorOpIn, "z2"))},
		"NotIn":        {want: refused, mutate: required(expr("zone", corev1.NodeSelectorOpNotIn, "z1"))},
		"NotIn a label the node lacks matches": {want: admitted,
			mutate: required(expr("rack", corev1.NodeSelectorOpNotIn, "r1"))},
		"Exists":       {want: admitted, mutate: required(expr("disk", corev1.NodeSelectorOpExists))},
		"DoesNotExist": {want: refused, mutate: required(expr("disk", corev1.NodeSelectorOpDoesNotExist))},
		"Gt":           {want: admitted, mutate: required(expr("cores", corev1.NodeSelectorOpGt, "4"))},
		"Gt, equal":    {want: refused, mutate: required(expr("cores", corev1.NodeSelectorOpGt, "8"))},
		"Lt":           {want: admitted, mutate: required(expr("cores", corev1.NodeSelectorOpLt, "16"))},
		"terms are ORed": {want: admitted,
			mutate: required(expr("zone", corev1.NodeSelectorOpIn, "z9"), expr("disk", corev1.NodeSelectorOpIn, "ssd"))},
		"expressions of a term are ANDed": {want: refused,
			mutate: required(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}},
				{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"hdd"}},
			}})},
		"matchFields on the node's name": {want: admitted,
			mutate: required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}},
			}})},
		"matchFields on another name": {want: refused,
			mutate: required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-b"}},
			}})},
		"the nodeSelector and the affinity must both match": {want: refused, mutate: func(p *corev1.Pod) {
			required(expr("zone", corev1.NodeSelectorOpIn, "z1"))(p)
			p.Spec.NodeSelector = map[string]string{"disk": "hdd"}
		}},
		"preferred affinity is not required": {want: admitted, mutate: func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: expr("zone", corev1.NodeSelectorOpIn, "z9")}},
			}}
		}},
		"resources are judged before affinity": {want: outOf("cpu", 3000, 0, 2000), mutate: func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"gpu": "true"}
			p.Spec.Containers[0].Resources = requests("cpu", "3")
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := New(Node{OS: "linux"})
			if err != nil {
				t.Fatal(err)
			}
			pod := basePod()
			tc.mutate(pod)
			if diff := cmp.Diff(tc.want, a.Admit(pod, roomyNode(), nil)); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmitTaints(t *testing.T) {
	refused := Result{Reason: "TaintToleration", Message: "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate"}
	admitted := Result{Admit: true}
	noExecute := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}
	tests := map[string]struct {
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        Result
	}{
		"no taints":                {want: admitted},
		"an untolerated NoExecute": {taints: []corev1.Taint{noExecute}, want: refused},
		"an untolerated NoSchedule is the scheduler's": {taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}, want: admitted},
		"an untolerated PreferNoSchedule too":          {taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}, want: admitted},
		"tolerated by key, value and effect": {taints: []corev1.Taint{noExecute}, want: admitted,
			tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoExecute}}},
		"Equal is the default operator": {taints: []corev1.Taint{noExecute}, want: admitted,
			tolerations: []corev1.Toleration{{Key: "dedicated", Value: "db"}}},
		"another value is not tolerated": {taints: []corev1.Taint{noExecute}, want: refused,
			tolerations: []corev1.Toleration{{Key: "dedicated", Value: "web"}}},
		"another effect is not tolerated": {taints: []corev1.Taint{noExecute}, want: refused,
			tolerations: []corev1.Toleration{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}}},
		"Exists tolerates any value": {taints: []corev1.Taint{noExecute}, want: admitted,
			tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}},
		"Exists with an empty key tolerates every taint": {taints: []corev1.Taint{noExecute, {Key: "other", Effect: corev1.TaintEffectNoExecute}}, want: admitted,
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		"one taint of two tolerated": {taints: []corev1.Taint{noExecute, {Key: "other", Effect: corev1.TaintEffectNoExecute}}, want: refused,
			tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}},
		"tolerationSeconds still tolerates on admission": {taints: []corev1.Taint{noExecute}, want: admitted,
			tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](5)}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := New(Node{OS: "linux"})
			if err != nil {
				t.Fatal(err)
			}
			node := roomyNode()
			node.Spec.Taints = tc.taints
			pod := basePod()
			pod.Spec.Tolerations = tc.tolerations
			if diff := cmp.Diff(tc.want, a.Admit(pod, node, nil)); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

func withHostPorts(name string, ports ...corev1.ContainerPort) *corev1.Pod {
	p := basePod()
	p.Name = name
	p.Spec.Containers[0].Ports = ports
	return p
}

func TestAdmitHostPorts(t *testing.T) {
	refused := Result{Reason: "NodePorts", Message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"}
	admitted := Result{Admit: true}
	port := func(hostIP string, protocol corev1.Protocol, hostPort int32) corev1.ContainerPort {
		return corev1.ContainerPort{ContainerPort: 80, HostIP: hostIP, Protocol: protocol, HostPort: hostPort}
	}
	always := corev1.ContainerRestartPolicyAlways
	tests := map[string]struct {
		pod   *corev1.Pod
		other []*corev1.Pod
		want  Result
	}{
		"a port nobody holds": {pod: withHostPorts("p", port("", "", 8080)), other: []*corev1.Pod{withHostPorts("o", port("", "", 8081))}, want: admitted},
		"the same port, both on every address": {pod: withHostPorts("p", port("", "", 8080)),
			other: []*corev1.Pod{withHostPorts("o", port("", "", 8080))}, want: refused},
		"TCP is the default protocol": {pod: withHostPorts("p", port("", corev1.ProtocolTCP, 8080)),
			other: []*corev1.Pod{withHostPorts("o", port("", "", 8080))}, want: refused},
		"another protocol on the same number": {pod: withHostPorts("p", port("", corev1.ProtocolUDP, 8080)),
			other: []*corev1.Pod{withHostPorts("o", port("", "", 8080))}, want: admitted},
		"two different IPs": {pod: withHostPorts("p", port("127.0.0.1", "", 8080)),
			other: []*corev1.Pod{withHostPorts("o", port("10.0.0.1", "", 8080))}, want: admitted},
		"the same IP": {pod: withHostPorts("p", port("127.0.0.1", "", 8080)),
			other: []*corev1.Pod{withHostPorts("o", port("127.0.0.1", "", 8080))}, want: refused},
		"an IP against every address held": {pod: withHostPorts("p", port("127.0.0.1", "", 8080)),
			other: []*corev1.Pod{withHostPorts("o", port("0.0.0.0", "", 8080))}, want: refused},
		"every address against an IP held": {pod: withHostPorts("p", port("", "", 8080)),
			other: []*corev1.Pod{withHostPorts("o", port("127.0.0.1", "", 8080))}, want: refused},
		"a container port without a host port holds nothing": {pod: withHostPorts("p", port("", "", 8080)),
			other: []*corev1.Pod{withHostPorts("o", corev1.ContainerPort{ContainerPort: 8080})}, want: admitted},
		"a pod's own ports do not clash": {pod: withHostPorts("p", port("", "", 8080), port("", "", 8080)), want: admitted},
		"a sidecar's port is held": {pod: withHostPorts("p", port("", "", 8080)), other: []*corev1.Pod{func() *corev1.Pod {
			o := basePod()
			o.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always, Ports: []corev1.ContainerPort{port("", "", 8080)}}}
			return o
		}()}, want: refused},
		"an init container's port is not": {pod: withHostPorts("p", port("", "", 8080)), other: []*corev1.Pod{func() *corev1.Pod {
			o := basePod()
			o.Spec.InitContainers = []corev1.Container{{Name: "init", Ports: []corev1.ContainerPort{port("", "", 8080)}}}
			return o
		}()}, want: admitted},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := New(Node{OS: "linux"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, a.Admit(tc.pod, roomyNode(), tc.other)); diff != "" {
				t.Errorf("Admit (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreatedBefore(t *testing.T) {
	at := func(ns, name, uid string, sec int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(time.Unix(1700000000+int64(sec), 0))}}
	}
	pods := []*corev1.Pod{
		at("b", "x", "1", 1), at("a", "z", "2", 2), at("a", "y", "3", 1), at("a", "y", "0", 1), at("a", "a", "4", 3),
	}
	sort.Slice(pods, func(i, j int) bool { return CreatedBefore(pods[i], pods[j]) })
	var got []string
	for _, p := range pods {
		got = append(got, p.Namespace+"/"+p.Name+"/"+string(p.UID))
	}
	want := []string{"a/y/0", "a/y/3", "b/x/1", "a/z/2", "a/a/4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("creation order (-want +got):\n%s", diff)
	}
}
