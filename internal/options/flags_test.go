package options

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/resources/admission"
)

func TestRegisterWithTaintsFlag(t *testing.T) {
	opts, err := Parse([]string{"--node-name=n", "--register-with-taints=a=1:NoSchedule", "--register-with-taints=nodelet.dev/companion:NoSchedule,b:NoExecute"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Given again, the flag replaces the list, as the kubelet's.
	want := []corev1.Taint{
		{Key: "nodelet.dev/companion", Effect: corev1.TaintEffectNoSchedule},
		{Key: "b", Effect: corev1.TaintEffectNoExecute},
	}
	if diff := cmp.Diff(want, opts.RegisterWithTaints); diff != "" {
		t.Errorf("RegisterWithTaints mismatch (-want +got):\n%s", diff)
	}
	if _, err := Parse([]string{"--node-name=n", "--register-with-taints=a:Never"}, nil); err == nil || !strings.Contains(err.Error(), "register-with-taints") {
		t.Errorf("a bad taint: error = %v, want one naming --register-with-taints", err)
	}
}

// registerWithTaints is the kubelet's configuration file field too: the
// file's taints are the Node's, unless the flag is given.
func TestRegisterWithTaintsInTheConfigFile(t *testing.T) {
	config := writeConfig(t, configHeader+"registerWithTaints:\n- {key: a, value: \"1\", effect: NoSchedule}\n")
	opts, err := Parse([]string{"--node-name=n", "--config", config}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]corev1.Taint{{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule}}, opts.RegisterWithTaints); diff != "" {
		t.Errorf("RegisterWithTaints from the file (-want +got):\n%s", diff)
	}
	opts, err = Parse([]string{"--node-name=n", "--config", config, "--register-with-taints=b:NoExecute"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]corev1.Taint{{Key: "b", Effect: corev1.TaintEffectNoExecute}}, opts.RegisterWithTaints); diff != "" {
		t.Errorf("RegisterWithTaints from the flag over the file's (-want +got):\n%s", diff)
	}
	bad := writeConfig(t, configHeader+"registerWithTaints:\n- {key: a, effect: Never}\n")
	if _, err := Parse([]string{"--node-name=n", "--config", bad}, nil); err == nil || !strings.Contains(err.Error(), "registerWithTaints[0]") {
		t.Errorf("a bad taint in the file: error = %v, want one naming registerWithTaints[0]", err)
	}
}

func TestCapacityFlag(t *testing.T) {
	tests := map[string]struct {
		args    []string
		want    map[string]string
		wantErr string
	}{
		"none": {args: nil, want: nil},
		"the pod's cpu and memory, inside its cgroup": {
			args: []string{"--capacity=cpu=1500m,memory=2Gi", "--cgroup-root-in-own-pod"},
			want: map[string]string{"cpu": "1500m", "memory": "2Gi"},
		},
		"the runtime's pod's cpu and memory, inside its cgroup": {
			args: []string{"--capacity=cpu=1,memory=1Gi", "--cgroup-root-in-runtime-pod", "--container-runtime-endpoint=unix:///run/nodelet-companion/containerd/containerd.sock"},
			want: map[string]string{"cpu": "1", "memory": "1Gi"},
		},
		"the runtime's pod's ephemeral storage too": {
			args: []string{"--capacity=cpu=1,memory=1Gi,ephemeral-storage=20Gi", "--cgroup-root-in-runtime-pod", "--container-runtime-endpoint=unix:///run/nodelet-companion/containerd/containerd.sock"},
			want: map[string]string{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "20Gi"},
		},
		"both pods' cgroups": {
			args:    []string{"--capacity=cpu=1", "--cgroup-root-in-own-pod", "--cgroup-root-in-runtime-pod"},
			wantErr: "exclude each other",
		},
		"the systemd driver inside a pod's cgroup": {
			args:    []string{"--cgroup-root-in-own-pod", "--cgroup-driver=systemd"},
			wantErr: "--cgroup-driver=systemd cannot put the pods' cgroups inside a pod's cgroup",
		},
		"the runtime's pod, found through a TCP endpoint": {
			args:    []string{"--cgroup-root-in-runtime-pod", "--container-runtime-endpoint=tcp://127.0.0.1:1234"},
			wantErr: "is not a unix socket",
		},
		"without the pod's cgroup": {
			args:    []string{"--capacity=cpu=1"},
			wantErr: "--capacity needs --cgroup-root-in-own-pod",
		},
		"another resource": {
			args:    []string{"--capacity=pods=10", "--cgroup-root-in-own-pod"},
			wantErr: `"pods" is not cpu, memory or ephemeral-storage`,
		},
		"not a quantity": {
			args:    []string{"--capacity=memory=lots", "--cgroup-root-in-own-pod"},
			wantErr: `memory="lots"`,
		},
		"zero": {
			args:    []string{"--capacity=cpu=0", "--cgroup-root-in-own-pod"},
			wantErr: "cpu=0 is not positive",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts, err := Parse(append([]string{"--node-name=n"}, tc.args...), nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) error = %v, want one containing %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, opts.Capacity); diff != "" {
				t.Errorf("Capacity mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostPortsSharedRefusesHostPorts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}}}}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{args: nil, want: ""},
		{args: []string{"--host-ports-shared"}, want: "HostPortsNotSupported"},
	} {
		opts, err := Parse(append([]string{"--node-name=n"}, tc.args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		admitter, err := admission.NewForNode("linux", "", opts.AllowedUnsafeSysctls, opts.HostPortsShared)
		if err != nil {
			t.Fatal(err)
		}
		node := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}}}
		if got := admitter.Admit(pod, node, nil); got.Reason != tc.want {
			t.Errorf("%q: Admit() = %+v, want reason %q", tc.args, got, tc.want)
		}
	}
}

func TestTopologyLabels(t *testing.T) {
	opts, err := Parse([]string{"--node-name=n", "--topology-zone=zone-a", "--topology-region="}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// An empty region, as the downward API gives for a label the host's
	// pod does not have, is no label.
	if diff := cmp.Diff(map[string]string{"topology.kubernetes.io/zone": "zone-a"}, opts.TopologyLabels()); diff != "" {
		t.Errorf("TopologyLabels() mismatch (-want +got):\n%s", diff)
	}
	for _, arg := range []string{"--topology-zone=not a label", "--topology-region=" + strings.Repeat("x", 64), "--hostname-override=a/b"} {
		if _, err := Parse([]string{"--node-name=n", arg}, nil); err == nil {
			t.Errorf("Parse(%s) took a value that is no label value", arg)
		}
	}
}

func TestHostRootFlags(t *testing.T) {
	opts, err := Parse([]string{"--node-name=n", "--host-root=/host", "--runtime-host-root=/rootfs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts.HostRoot != "/host" || opts.RuntimeHostRoot != "/rootfs" {
		t.Errorf("--host-root=/host --runtime-host-root=/rootfs: %q, %q", opts.HostRoot, opts.RuntimeHostRoot)
	}
	for _, flag := range []string{"--host-root", "--runtime-host-root"} {
		for _, value := range []string{"host", "/", "/host/", "/a/../host"} {
			if _, err := Parse([]string{"--node-name=n", flag + "=" + value}, nil); err == nil {
				t.Errorf("%s=%s taken, want it refused", flag, value)
			}
		}
	}
}

func TestNodeLabelsFlag(t *testing.T) {
	opts, err := Parse([]string{"--node-name=n", "--topology-zone=zone-a",
		"--node-labels=nodelet.dev/release=companion,nodelet.dev/release-namespace=nodelet-system,node.kubernetes.io/pool=edge"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"nodelet.dev/release": "companion", "nodelet.dev/release-namespace": "nodelet-system",
		"node.kubernetes.io/pool": "edge", "topology.kubernetes.io/zone": "zone-a",
	}
	if diff := cmp.Diff(want, opts.RegistrationLabels()); diff != "" {
		t.Errorf("RegistrationLabels() mismatch (-want +got):\n%s", diff)
	}
	for _, value := range []string{
		"kubernetes.io/hostname=other", "topology.kubernetes.io/zone=b", "foo.k8s.io/x=y",
		"nodelet.dev/agent=kubelet", "nodelet.dev/release=not a value", "bad key=v",
	} {
		if _, err := Parse([]string{"--node-name=n", "--node-labels=" + value}, nil); err == nil {
			t.Errorf("--node-labels=%s taken, want it refused", value)
		}
	}
	if _, err := Parse([]string{"--node-name=n", "--node-labels=sub.kubelet.kubernetes.io/x=y,plain=z"}, nil); err != nil {
		t.Errorf("--node-labels with a kubelet.kubernetes.io prefix and a key without a prefix: %v", err)
	}
}

// TestManifestURLHeaderFlag: --manifest-url-header takes name:value pairs,
// keeps a name's values in order and adds to them when given again, as
// the kubelet's example says.
func TestManifestURLHeaderFlag(t *testing.T) {
	opts, err := Parse([]string{"--node-name=n", "--manifest-url=http://config/pods",
		"--manifest-url-header", "a:hello,b:again,c:world", "--manifest-url-header", "b:beautiful"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"hello"}, "b": {"again", "beautiful"}, "c": {"world"}}
	if diff := cmp.Diff(want, opts.StaticPodURLHeader); diff != "" {
		t.Errorf("StaticPodURLHeader (-want +got):\n%s", diff)
	}
	if _, err := Parse([]string{"--node-name=n", "--manifest-url-header=novalue"}, nil); err == nil {
		t.Error("a header without a colon: no error")
	}
}
