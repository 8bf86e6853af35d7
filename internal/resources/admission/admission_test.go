package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// basePod is admitted on every node of the tests; each case mutates it.
func basePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func withSysctls(pod *corev1.Pod, names ...string) {
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	for _, n := range names {
		pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
	}
}

func TestAdmit(t *testing.T) {
	linux := Node{OS: "linux", KernelVersion: "6.1.0-18-amd64"}
	admitted := Result{Admit: true}
	forbidden := func(msg string) Result {
		return Result{Reason: ReasonSysctlForbidden, Message: "forbidden sysctl: " + msg}
	}
	tests := map[string]struct {
		node   Node
		mutate func(*corev1.Pod)
		want   Result
	}{
		"a plain pod is admitted": {node: linux, mutate: func(*corev1.Pod) {}, want: admitted},
		"spec.os linux on linux is admitted": {node: linux, want: admitted,
			mutate: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Linux} }},
		"spec.os windows on linux is refused": {node: linux,
			mutate: func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: corev1.Windows} },
			want:   Result{Reason: "PodOSNotSupported", Message: "Failed to admit pod as the OS field doesn't match node OS"}},
		"a kubernetes.io/os label of another OS is refused before the field": {node: linux,
			mutate: func(p *corev1.Pod) {
				p.Labels[corev1.LabelOSStable] = "windows"
				p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			},
			want: Result{Reason: "PodOSSelectorNodeLabelDoesNotMatch", Message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"}},
		"a kubernetes.io/os label of the node's OS is admitted": {node: linux, want: admitted,
			mutate: func(p *corev1.Pod) { p.Labels[corev1.LabelOSStable] = "linux" }},
		"a nodeSelector naming another OS is node affinity's business, not the OS check's": {node: linux,
			mutate: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelOSStable: "windows"} },
			want:   Result{Reason: "NodeAffinity", Message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"}},
		"a safe sysctl is admitted": {node: linux, want: admitted,
			mutate: func(p *corev1.Pod) { withSysctls(p, "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range") }},
		"a safe sysctl written with slashes is admitted": {node: linux, want: admitted,
			mutate: func(p *corev1.Pod) { withSysctls(p, "net/ipv4/tcp_syncookies") }},
		"a sysctl safe from kernel 4.15 is admitted on 6.1": {node: linux, want: admitted,
			mutate: func(p *corev1.Pod) { withSysctls(p, "net.ipv4.tcp_rmem") }},
		"a sysctl safe from kernel 4.15 is refused on 4.14": {node: Node{OS: "linux", KernelVersion: "4.14.0"},
			mutate: func(p *corev1.Pod) { withSysctls(p, "net.ipv4.tcp_rmem") },
			want:   forbidden(`"net.ipv4.tcp_rmem" not allowlisted`)},
		"a sysctl that needs a kernel version is refused when the version is unknown": {node: Node{OS: "linux"},
			mutate: func(p *corev1.Pod) { withSysctls(p, "net.ipv4.tcp_fin_timeout") },
			want:   forbidden(`"net.ipv4.tcp_fin_timeout" not allowlisted`)},
		"an unsafe sysctl not allowed is refused": {node: linux,
			mutate: func(p *corev1.Pod) { withSysctls(p, "kernel.shm_rmid_forced", "net.core.somaxconn") },
			want:   forbidden(`"net.core.somaxconn" not allowlisted`)},
		"an unsafe sysctl allowed by name is admitted": {node: Node{OS: "linux", AllowedUnsafeSysctls: []string{"net.core.somaxconn"}},
			want: admitted, mutate: func(p *corev1.Pod) { withSysctls(p, "net.core.somaxconn") }},
		"an unsafe sysctl allowed by a prefix is admitted": {node: Node{OS: "linux", AllowedUnsafeSysctls: []string{"kernel.msg*"}},
			want: admitted, mutate: func(p *corev1.Pod) { withSysctls(p, "kernel.msgmax") }},
		"a safe net sysctl with hostNetwork is refused": {node: linux,
			mutate: func(p *corev1.Pod) {
				withSysctls(p, "net.ipv4.ip_local_port_range")
				p.Spec.HostNetwork = true
			},
			want: forbidden(`"net.ipv4.ip_local_port_range" not allowed with host Net enabled`)},
		"an allowed net prefix with hostNetwork is refused": {node: Node{OS: "linux", AllowedUnsafeSysctls: []string{"net.core.*"}},
			mutate: func(p *corev1.Pod) {
				withSysctls(p, "net.core.somaxconn")
				p.Spec.HostNetwork = true
			},
			want: forbidden(`"net.core.somaxconn" not allowed with host Net enabled`)},
		"an IPC sysctl with hostIPC is refused": {node: linux,
			mutate: func(p *corev1.Pod) {
				withSysctls(p, "kernel.shm_rmid_forced")
				p.Spec.HostIPC = true
			},
			want: forbidden(`"kernel.shm_rmid_forced" not allowed with host IPC enabled`)},
		"an IPC sysctl with hostNetwork is admitted": {node: linux, want: admitted,
			mutate: func(p *corev1.Pod) {
				withSysctls(p, "kernel.shm_rmid_forced")
				p.Spec.HostNetwork = true
			}},
		"a pod claiming dynamic resources is refused": {node: linux,
			mutate: func(p *corev1.Pod) {
				p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")}}
			},
			want: Result{Reason: "DynamicResourcesNotSupported", Message: "nodelet cannot prepare dynamic resources: the pod's spec.resourceClaims cannot be honoured on this node"}},
		"a host port on a node that shares its host's ports is refused": {node: Node{OS: "linux", HostPortsShared: true},
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, HostPort: 5353, Protocol: corev1.ProtocolUDP}}
			},
			want: Result{Reason: "HostPortsNotSupported", Message: "the node shares its host's address and ports with the host's other pods, which nodelet cannot see: the pod's host port 5353/UDP cannot be held on it"}},
		"a sidecar's host port on such a node is refused, with the protocol defaulted": {node: Node{OS: "linux", HostPortsShared: true},
			mutate: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}}}
			},
			want: Result{Reason: "HostPortsNotSupported", Message: "the node shares its host's address and ports with the host's other pods, which nodelet cannot see: the pod's host port 8080/TCP cannot be held on it"}},
		"container ports alone on such a node are admitted": {node: Node{OS: "linux", HostPortsShared: true}, want: admitted,
			mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}} }},
		"a host port on a node with ports of its own is admitted": {node: linux, want: admitted,
			mutate: func(p *corev1.Pod) {
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			}},
		"sysctls are judged before the OS": {node: linux,
			mutate: func(p *corev1.Pod) {
				withSysctls(p, "vm.swappiness")
				p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			},
			want: forbidden(`"vm.swappiness" not allowlisted`)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a, err := New(tc.node)
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

func TestStatusMessage(t *testing.T) {
	r := Result{Reason: ReasonPodOSNotSupported, Message: "Failed to admit pod as the OS field doesn't match node OS"}
	if got, want := r.StatusMessage(), "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS"; got != want {
		t.Errorf("StatusMessage() = %q, want %q", got, want)
	}
}

// NewForNode takes the node's kernel release as the Node reports it: a
// sysctl safe from 4.15 on is admitted on a 6.1 kernel, not on a 4.4 one
// nor on one whose release is unknown.
func TestNewForNode(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_rmem", Value: "4096 87380 6291456"}}},
		Containers:      []corev1.Container{{Name: "c"}},
	}}
	node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}
	for release, want := range map[string]string{"6.1.0-18-amd64": "", "4.4.0": ReasonSysctlForbidden, "": ReasonSysctlForbidden} {
		a, err := NewForNode("linux", release, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Admit(pod, node, nil); got.Reason != want {
			t.Errorf("kernel %q: Admit() = %+v, want reason %q", release, got, want)
		}
	}
	if _, err := NewForNode("linux", "", []string{"vm.swappiness"}, false); err == nil || !strings.Contains(err.Error(), `setting up pod admission: the sysctls "vm.swappiness"`) {
		t.Errorf("an unsafe sysctl of no namespace: error = %v, want one naming pod admission and the sysctl", err)
	}
}

func TestValidateSysctlPatterns(t *testing.T) {
	tests := map[string]struct {
		patterns []string
		wantErr  string
	}{
		"none":                               {},
		"names and prefixes of namespaced":   {patterns: []string{"net.core.somaxconn", "net.*", "kernel.msg*", "fs.mqueue.*", "kernel.sem"}},
		"a sysctl of no namespace":           {patterns: []string{"vm.swappiness"}, wantErr: `the sysctls "vm.swappiness" are not known to be namespaced`},
		"a prefix of no namespace":           {patterns: []string{"kernel.*"}, wantErr: `the sysctls "kernel." are not known to be namespaced`},
		"not a sysctl at all":                {patterns: []string{"Net.Core"}, wantErr: `sysctl "Net.Core" must have at most 253 characters and match regex`},
		"a star in the middle is no pattern": {patterns: []string{"net.*.x"}, wantErr: `sysctl "net.*.x" must have`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := ValidateSysctlPatterns(tc.patterns)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("ValidateSysctlPatterns(%q) = %v, want nil", tc.patterns, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("ValidateSysctlPatterns(%q) = %v, want an error holding %q", tc.patterns, err, tc.wantErr)
			}
		})
	}
}

func TestWasAdmitted(t *testing.T) {
	ran := basePod()
	ran.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", ContainerID: "containerd://abc"}}
	rejected := basePod()
	rejected.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown"}}}}
	tests := map[string]struct {
		pod          *corev1.Pod
		runtimeState bool
		want         bool
	}{
		"a new pod":                                   {pod: basePod(), want: false},
		"a pod the runtime holds something of":        {pod: basePod(), runtimeState: true, want: true},
		"a pod whose status shows a container ran":    {pod: ran, want: true},
		"a pod whose containers never ran in runtime": {pod: rejected, want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := WasAdmitted(tc.pod, tc.runtimeState); got != tc.want {
				t.Errorf("WasAdmitted() = %v, want %v", got, tc.want)
			}
		})
	}
}
