// Package fieldpath reads the fields of a Pod that the downward API
// exposes, for environment variables and downwardAPI volumes alike.
package fieldpath

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodField returns one field of the pod as the downward API shows it. A
// whole label or annotation map is one `key="value"` line per entry,
// sorted by key, values quoted as Go quotes them; a single entry is
// addressed as metadata.labels['key']. Fields of the pod's status (its IPs)
// are not the pod object's to give and are not served here.
func PodField(pod *corev1.Pod, fieldPath string) (string, error) {
	if field, key, ok := splitSubscript(fieldPath); ok {
		switch field {
		case "metadata.labels":
			return pod.Labels[key], nil
		case "metadata.annotations":
			return pod.Annotations[key], nil
		}
		return "", fmt.Errorf("fieldPath %q does not support a subscript", fieldPath)
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	return "", fmt.Errorf("fieldRef %q is not supported yet", fieldPath)
}

// splitSubscript splits "metadata.labels['app']" into the field and the
// key.
func splitSubscript(fieldPath string) (field, key string, ok bool) {
	rest, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	field, key, found = strings.Cut(rest, "['")
	if !found || field == "" {
		return "", "", false
	}
	return field, key, true
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[k]))
	}
	return b.String()
}
