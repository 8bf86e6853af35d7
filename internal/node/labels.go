package node

// The labels a Node that exists is brought back to when nodelet starts.

import corev1 "k8s.io/api/core/v1"

// defaultLabels are the labels the kubelet sets again on its Node each
// time it starts (its updateDefaultLabels): which machine, where, and of
// what kind. Others (--node-labels, an administrator's) are the Node's
// once it exists, and its taints too: NodeRestriction lets a node set
// them only when it creates its Node.
var defaultLabels = []string{
	corev1.LabelHostname,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceTypeStable,
	corev1.LabelInstanceType,
	corev1.LabelOSStable,
	corev1.LabelArchStable,
	corev1.LabelWindowsBuild,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
}

// updateDefaultLabels sets on existing each default label that initial,
// the Node nodelet would create, has, and says whether that changed
// existing. A default label initial lacks is left as it is (a zone no
// longer given is not removed), as the kubelet does. Pure but for
// existing.
func updateDefaultLabels(initial, existing *corev1.Node) bool {
	changed := false
	if existing.Labels == nil {
		existing.Labels = map[string]string{}
	}
	for _, label := range defaultLabels {
		value, ok := initial.Labels[label]
		if !ok {
			continue
		}
		if existing.Labels[label] != value {
			existing.Labels[label] = value
			changed = true
		}
		if existing.Labels[label] == "" {
			delete(existing.Labels, label)
		}
	}
	return changed
}
