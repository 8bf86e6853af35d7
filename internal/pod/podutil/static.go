package podutil

import corev1 "k8s.io/api/core/v1"

// The kubelet's annotations of the pods it reads from its config sources.
const (
	// ConfigSourceAnnotation names the source a pod came from: "file" or
	// "http" for a static pod, "api" for the API server's.
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	// ConfigHashAnnotation is a static pod's hash, also its UID; its
	// mirror pod carries it in MirrorPodAnnotation.
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// ConfigSeenAnnotation is when the node first saw the pod.
	ConfigSeenAnnotation = "kubernetes.io/config.seen"

	// FileSource and HTTPSource are the static pod sources.
	FileSource = "file"
	HTTPSource = "http"
)

// IsStaticPod reports whether a pod came from a static pod source, not the
// API server.
func IsStaticPod(pod *corev1.Pod) bool {
	source, ok := pod.Annotations[ConfigSourceAnnotation]
	return ok && source != "api"
}

// IsMirrorPod reports whether a pod is the API server's copy of a static
// pod: it shows the static pod's status and is never run itself.
func IsMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[MirrorPodAnnotation]
	return ok
}
