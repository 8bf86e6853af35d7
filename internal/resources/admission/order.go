package admission

import corev1 "k8s.io/api/core/v1"

// CreatedBefore orders pods as the kubelet admits a batch of them: by
// creation time, oldest first. creationTimestamp has a resolution of one
// second, and the kubelet leaves pods of the same second in no particular
// order; nodelet breaks the tie by namespace, name, then UID, so that which
// pods of a burst fit does not depend on the order they were reconciled in.
func CreatedBefore(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}
