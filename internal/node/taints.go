package node

// The taints a node registers with, given as the kubelet's
// --register-with-taints: comma-separated "<key>=<value>:<effect>" or
// "<key>:<effect>".

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

// ParseTaints reads a --register-with-taints value. Each taint must be
// valid (configv1alpha1.ValidateTaint); no two may have the same key and
// effect, as the API server would refuse the Node. An empty value is no
// taint.
func ParseTaints(spec string) ([]corev1.Taint, error) {
	if spec == "" {
		return nil, nil
	}
	var taints []corev1.Taint
	for _, item := range strings.Split(spec, ",") {
		taint, err := parseTaint(item)
		if err != nil {
			return nil, err
		}
		for _, seen := range taints {
			if seen.Key == taint.Key && seen.Effect == taint.Effect {
				return nil, fmt.Errorf("duplicated taints with the same key and effect: %s", item)
			}
		}
		taints = append(taints, taint)
	}
	return taints, nil
}

func parseTaint(item string) (corev1.Taint, error) {
	keyValue, effect, ok := strings.Cut(item, ":")
	if !ok || strings.Contains(effect, ":") {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec %q: want <key>=<value>:<effect> or <key>:<effect>", item)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	if strings.Contains(value, "=") {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec %q", item)
	}
	taint := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if err := configv1alpha1.ValidateTaint(taint); err != nil {
		return corev1.Taint{}, fmt.Errorf("invalid taint spec %q: %w", item, err)
	}
	return taint, nil
}

// FormatTaints is ParseTaints' inverse, for the flag's default in --help.
func FormatTaints(taints []corev1.Taint) string {
	items := make([]string, 0, len(taints))
	for _, t := range taints {
		item := t.Key
		if t.Value != "" {
			item += "=" + t.Value
		}
		items = append(items, item+":"+string(t.Effect))
	}
	return strings.Join(items, ",")
}
