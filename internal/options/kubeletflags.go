package options

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KubernetesVersion is the version of Kubernetes nodelet implements: the
// kubelet's it stands in for, reported as the Node's kubeletVersion and
// by --version, and the one its feature gates are of. It is the
// k8s.io/kubernetes hack/tools pins, the control plane nodelet is built
// and tested against (a test checks).
const KubernetesVersion = "v1.36.3"

// taintExternalCloudProvider is the taint the kubelet registers its Node
// with under --cloud-provider=external, which the cloud's controller
// manager removes once it has initialised the Node.
var taintExternalCloudProvider = corev1.Taint{
	Key:    "node.cloudprovider.kubernetes.io/uninitialized",
	Value:  "true",
	Effect: corev1.TaintEffectNoSchedule,
}

// honouredFeatureGates are the kubelet's feature gates nodelet takes set
// either way, as it does what each says. None yet.
var honouredFeatureGates = map[string]bool{}

// applyKubeletFlags gives the kubelet's flags their meaning in nodelet's
// settings, after the flags are parsed. --hostname-override is also the
// Node's name, lowercased, as the kubelet's, unless --node-name is given:
// a companion node, whose name is its own, has its host's hostname.
func (s *NodeletServer) applyKubeletFlags(nodeNameGiven bool) {
	if override := strings.TrimSpace(s.HostnameOverride); override != "" && !nodeNameGiven {
		s.NodeName = strings.ToLower(override)
	}
	if s.CloudProvider == "external" && !slices.ContainsFunc(s.RegisterWithTaints, func(t corev1.Taint) bool { return t.MatchTaint(&taintExternalCloudProvider) }) {
		s.RegisterWithTaints = append(s.RegisterWithTaints, taintExternalCloudProvider)
	}
}

// validateKubeletFlags refuses, by name and with the reason, a value of a
// kubelet flag nodelet cannot honour.
func (f *Flags) validateKubeletFlags() error {
	switch {
	case f.CloudProvider != "" && f.CloudProvider != "external":
		return fmt.Errorf("--cloud-provider %q is not supported: the kubelet has had no cloud providers of its own since v1.31; want \"\" or \"external\"", f.CloudProvider)
	case f.ProviderID != "":
		return errors.New("--provider-id is not supported by nodelet: it does not set the Node's spec.providerID yet")
	case f.PodInfraContainerImage != "":
		return errors.New("--pod-infra-container-image is not supported, as by the kubelet since v1.35: the sandbox image is the container runtime's setting")
	case f.RuntimeCgroups != "":
		return errors.New("--runtime-cgroups is not supported by nodelet: it does not move the container runtime into a cgroup")
	case f.KubeletCgroups != "":
		return errors.New("--kubelet-cgroups is not supported by nodelet: it does not move itself into a cgroup")
	case f.FailSwapOn:
		return errors.New("--fail-swap-on=true is not supported by nodelet: it does not check the node's swap (--fail-swap-on=false is what it does)")
	case f.ImageCredentialProviderConfig != "":
		return errors.New("--image-credential-provider-config is not supported by nodelet: credential provider plugins are not implemented yet")
	case f.ImageCredentialProviderBinDir != "":
		return errors.New("--image-credential-provider-bin-dir is not supported by nodelet: credential provider plugins are not implemented yet")
	case f.LoggingFormat != "" && f.LoggingFormat != "text" && f.LoggingFormat != "json":
		return fmt.Errorf("--logging-format %q: want text or json", f.LoggingFormat)
	case f.Verbosity < 0:
		return fmt.Errorf("--v=%d: want 0 or more", f.Verbosity)
	case f.Version != "" && f.Version != "false" && f.Version != "true":
		return fmt.Errorf("--version=%s: want true or false", f.Version)
	}
	for _, gate := range slices.Sorted(maps.Keys(f.FeatureGates)) {
		enabled, err := strconv.ParseBool(f.FeatureGates[gate])
		if err != nil {
			return fmt.Errorf("--feature-gates: %s=%s: want true or false", gate, f.FeatureGates[gate])
		}
		if err := checkFeatureGate(gate, enabled); err != nil {
			return fmt.Errorf("--feature-gates: %w", err)
		}
	}
	return nil
}

// checkFeatureGate takes a kubelet feature gate set to its default in the
// Kubernetes version nodelet implements, or one nodelet honours.
func checkFeatureGate(gate string, enabled bool) error {
	if honouredFeatureGates[gate] {
		return nil
	}
	def, known := featureGateDefaults[gate]
	switch {
	case !known:
		return fmt.Errorf("%s is not a feature gate of Kubernetes %s", gate, KubernetesVersion)
	case enabled != def:
		return fmt.Errorf("%s=%t is not supported by nodelet (its default in Kubernetes %s, %t, is)", gate, enabled, KubernetesVersion, def)
	}
	return nil
}
