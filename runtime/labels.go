package runtime

import (
	"hash/fnv"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// Labels and annotations make the runtime's records self-describing: from
// them alone nodelet can tell which pod and container a runtime object
// belongs to (the labels, package container's), which spec it was started
// from and how often it restarted. The keys are the kubelet's but for
// nodelet's own.
const (
	AnnotationContainerHash            = "io.kubernetes.container.hash"
	AnnotationRestartCount             = "io.kubernetes.container.restartCount"
	AnnotationTerminationMessagePath   = "io.kubernetes.container.terminationMessagePath"
	AnnotationTerminationMessagePolicy = "io.kubernetes.container.terminationMessagePolicy"
	AnnotationPodTerminationGrace      = "io.kubernetes.pod.terminationGracePeriod"

	// AnnotationRestartBackoff is nodelet's own: the crash-loop delay waited
	// before this container instance started. Keeping it on the container
	// makes the back-off survive a nodelet restart.
	AnnotationRestartBackoff = "nodelet.dev/restart-backoff"
)

// identityFromLabels decodes a runtime object's owner; ok is false for
// objects nodelet did not create.
func identityFromLabels(labels map[string]string) (kubecontainer.PodIdentity, bool) {
	id := kubecontainer.PodIdentity{
		UID:       types.UID(labels[kubecontainer.LabelPodUID]),
		Name:      labels[kubecontainer.LabelPodName],
		Namespace: labels[kubecontainer.LabelPodNamespace],
	}
	return id, id.UID != "" && id.Name != "" && id.Namespace != ""
}

// newSandboxLabels carries the pod's own labels plus its identity, as the
// kubelet does, so that the sandbox can be found by the pod's UID.
func newSandboxLabels(pod *corev1.Pod) map[string]string {
	labels := make(map[string]string, len(pod.Labels)+3)
	for k, v := range pod.Labels {
		labels[k] = v
	}
	labels[kubecontainer.LabelPodName] = pod.Name
	labels[kubecontainer.LabelPodNamespace] = pod.Namespace
	labels[kubecontainer.LabelPodUID] = string(pod.UID)
	return labels
}

func newSandboxAnnotations(pod *corev1.Pod) map[string]string {
	annotations := make(map[string]string, len(pod.Annotations))
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	return annotations
}

func newContainerLabels(pod *corev1.Pod, container *corev1.Container) map[string]string {
	return map[string]string{
		kubecontainer.LabelPodName:       pod.Name,
		kubecontainer.LabelPodNamespace:  pod.Namespace,
		kubecontainer.LabelPodUID:        string(pod.UID),
		kubecontainer.LabelContainerName: container.Name,
	}
}

func newContainerAnnotations(pod *corev1.Pod, container *corev1.Container, restartCount int, backoff time.Duration) map[string]string {
	annotations := map[string]string{
		AnnotationContainerHash:            HashContainer(container),
		AnnotationRestartCount:             strconv.Itoa(restartCount),
		AnnotationTerminationMessagePath:   container.TerminationMessagePath,
		AnnotationTerminationMessagePolicy: string(container.TerminationMessagePolicy),
		AnnotationPodTerminationGrace:      strconv.FormatInt(podutil.TerminationGracePeriodSeconds(pod), 10),
	}
	if backoff > 0 {
		annotations[AnnotationRestartBackoff] = backoff.String()
	}
	annotations[AnnotationResources] = encodeResizeValues(kubecontainer.ResizeValuesOf(container.Resources))
	return annotations
}

// containerAnnotations is what nodelet reads back from a container's
// annotations. Values it cannot parse decode as zero: a runtime object with
// damaged annotations is treated as a fresh container, never as a crash.
type containerAnnotations struct {
	Hash                     string
	RestartCount             int
	RestartBackoff           time.Duration
	TerminationGracePeriod   time.Duration
	TerminationMessagePath   string
	TerminationMessagePolicy corev1.TerminationMessagePolicy
	// Resources are what the instance was created with, when recorded.
	Resources    kubecontainer.ResizeValues
	HasResources bool
}

func decodeContainerAnnotations(annotations map[string]string) containerAnnotations {
	var info containerAnnotations
	info.Hash = annotations[AnnotationContainerHash]
	info.TerminationMessagePath = annotations[AnnotationTerminationMessagePath]
	info.TerminationMessagePolicy = corev1.TerminationMessagePolicy(annotations[AnnotationTerminationMessagePolicy])
	info.Resources, info.HasResources = decodeResizeValues(annotations[AnnotationResources])
	// The API's restartCount is an int32 and the next instance counts one
	// more: a count that leaves no room for it is damaged.
	if n, err := strconv.Atoi(annotations[AnnotationRestartCount]); err == nil && n >= 0 && n < math.MaxInt32 {
		info.RestartCount = n
	}
	// nodelet never waits longer than the maximum; doubling a longer one
	// would overflow.
	if d, err := time.ParseDuration(annotations[AnnotationRestartBackoff]); err == nil && d > 0 {
		info.RestartBackoff = min(d, MaxRestartBackoff)
	}
	// The API bounds no grace period; one longer than a Duration holds
	// is as good as forever.
	if s, err := strconv.ParseInt(annotations[AnnotationPodTerminationGrace], 10, 64); err == nil && s >= 0 {
		info.TerminationGracePeriod = time.Duration(math.MaxInt64)
		if s <= math.MaxInt64/int64(time.Second) {
			info.TerminationGracePeriod = time.Duration(s) * time.Second
		}
	}
	return info
}

// HashContainer identifies the parts of a container spec that, when changed
// in a running pod, require a new container. The API allows only the image
// to change, so name and image are the whole of it; hashing nothing else
// keeps nodelet upgrades from restarting containers whose spec gained a
// defaulted field.
func HashContainer(container *corev1.Container) string {
	h := fnv.New32a()
	h.Write([]byte(container.Name))
	h.Write([]byte{0})
	h.Write([]byte(container.Image))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
