package options

// Tests of the kubelet's flags: Parse over command lines.

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestKubeletFlags(t *testing.T) {
	for name, c := range map[string]struct {
		args    []string
		refused string // "" when taken
	}{
		"the kubeadm drop-in's kubeconfigs":   {args: []string{"--bootstrap-kubeconfig=/b.conf", "--kubeconfig=/k.conf"}},
		"--v":                                 {args: []string{"--v=4"}},
		"--v negative":                        {args: []string{"--v=-1"}, refused: "--v=-1"},
		"--logging-format text":               {args: []string{"--logging-format=text"}},
		"--logging-format json":               {args: []string{"--logging-format=json"}},
		"--logging-format other":              {args: []string{"--logging-format=xml"}, refused: `--logging-format "xml"`},
		"a gate at its v1.36 default":         {args: []string{"--feature-gates=NodeSwap=true,AllAlpha=false"}},
		"a gate not at its default":           {args: []string{"--feature-gates=NodeSwap=false"}, refused: "--feature-gates: NodeSwap=false is not supported by nodelet (its default in Kubernetes v1.36.3, true, is)"},
		"an unknown gate":                     {args: []string{"--feature-gates=NoSuchGate=true"}, refused: "--feature-gates: NoSuchGate is not a feature gate of Kubernetes v1.36.3"},
		"a gate that is not a bool":           {args: []string{"--feature-gates=NodeSwap=yes"}, refused: "--feature-gates: NodeSwap=yes: want true or false"},
		"--cloud-provider empty":              {args: []string{"--cloud-provider="}},
		"--cloud-provider external":           {args: []string{"--cloud-provider=external"}},
		"--cloud-provider aws":                {args: []string{"--cloud-provider=aws"}, refused: `--cloud-provider "aws" is not supported: the kubelet has had no cloud providers of its own since v1.31`},
		"--provider-id":                       {args: []string{"--provider-id=aws:///i-1"}, refused: "--provider-id is not supported by nodelet"},
		"--pod-infra-container-image":         {args: []string{"--pod-infra-container-image=registry.k8s.io/pause:3.10"}, refused: "--pod-infra-container-image is not supported, as by the kubelet since v1.35"},
		"--runtime-cgroups":                   {args: []string{"--runtime-cgroups=/system.slice/containerd.service"}, refused: "--runtime-cgroups is not supported by nodelet"},
		"--kubelet-cgroups":                   {args: []string{"--kubelet-cgroups=/system.slice/kubelet.service"}, refused: "--kubelet-cgroups is not supported by nodelet"},
		"--fail-swap-on=false":                {args: []string{"--fail-swap-on=false"}},
		"--fail-swap-on":                      {args: []string{"--fail-swap-on"}, refused: "--fail-swap-on=true is not supported by nodelet"},
		"--rotate-certificates":               {args: []string{"--rotate-certificates"}},
		"--image-credential-provider-config":  {args: []string{"--image-credential-provider-config=/etc/kubernetes/cred.yaml"}, refused: "--image-credential-provider-config is not supported by nodelet: credential provider plugins are not implemented yet"},
		"--image-credential-provider-bin-dir": {args: []string{"--image-credential-provider-bin-dir=/usr/libexec/cred"}, refused: "--image-credential-provider-bin-dir is not supported by nodelet"},
		"the settings nodelet has": {args: []string{
			"--container-runtime-endpoint=unix:///run/containerd/containerd.sock", "--node-ip=10.0.0.5",
			"--node-labels=node.kubernetes.io/role=worker", "--register-with-taints=a=b:NoSchedule", "--cgroup-driver=systemd",
			"--cert-dir=/var/lib/kubelet/pki", "--root-dir=/var/lib/kubelet", "--max-pods=50", "--resolv-conf=/run/systemd/resolve/resolv.conf",
			"--cluster-dns=10.96.0.10", "--cluster-domain=cluster.local",
		}},
		"--version=maybe": {args: []string{"--version=maybe"}, refused: "--version=maybe: want true or false"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(append([]string{"--node-name=n"}, c.args...), nil)
			switch {
			case c.refused == "" && err != nil:
				t.Errorf("Parse(%v): %v, want it taken", c.args, err)
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("Parse(%v): %v, want refused: %s", c.args, err, c.refused)
			}
		})
	}
}

func TestVersionFlagNeedsNothingElse(t *testing.T) {
	for _, arg := range []string{"--version", "--version=true"} {
		s, err := Parse([]string{arg, "--node-identity=nonsense"}, nil)
		if err != nil || s.Version != "true" {
			t.Errorf("Parse(%s): %v, version %q; want it taken before validation", arg, err, s.Version)
		}
	}
}

func TestHostnameOverride(t *testing.T) {
	// As the kubelet's: the node's name too, lowercased.
	s, err := Parse([]string{"--hostname-override=Worker-1.Example"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.NodeName != "worker-1.example" || s.HostnameOverride != "Worker-1.Example" {
		t.Errorf("--hostname-override alone: node %q, hostname %q; want worker-1.example, Worker-1.Example", s.NodeName, s.HostnameOverride)
	}
	// A companion node: its own name, its host's hostname.
	s, err = Parse([]string{"--node-name=host-nodelet", "--hostname-override=host"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.NodeName != "host-nodelet" || s.HostnameOverride != "host" {
		t.Errorf("--node-name with --hostname-override: node %q, hostname %q; want host-nodelet, host", s.NodeName, s.HostnameOverride)
	}
}

func TestCloudProviderExternalTaintsTheNode(t *testing.T) {
	s, err := Parse([]string{"--node-name=n", "--cloud-provider=external", "--register-with-taints=a=b:NoSchedule"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Taint{{Key: "a", Value: "b", Effect: corev1.TaintEffectNoSchedule}, taintExternalCloudProvider}
	if !slices.EqualFunc(s.RegisterWithTaints, want, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value }) {
		t.Errorf("taints %v, want %v", s.RegisterWithTaints, want)
	}
	s, err = Parse([]string{"--node-name=n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RegisterWithTaints) != 0 {
		t.Errorf("without --cloud-provider: taints %v, want none", s.RegisterWithTaints)
	}
}
