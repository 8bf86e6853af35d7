package node

// The node's status.images, as the kubelet's Images setter lists them.
// Pure.

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// maxImagesInNodeStatus is the kubelet's default nodeStatusMaxImages.
	maxImagesInNodeStatus = 50
	// maxNamesPerImageInNodeStatus is the kubelet's
	// MaxNamesPerImageInNodeStatus.
	maxNamesPerImageInNodeStatus = 5
)

// nodeImages is status.images: the largest images first (ties by ID,
// descending, as the kubelet sorts), at most 50, each named by its repo
// digests then its repo tags, at most 5 names.
func nodeImages(images []*runtimeapi.Image) []corev1.ContainerImage {
	sorted := append([]*runtimeapi.Image(nil), images...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].GetSize() == sorted[j].GetSize() {
			return sorted[i].GetId() > sorted[j].GetId()
		}
		return sorted[i].GetSize() > sorted[j].GetSize()
	})
	if len(sorted) > maxImagesInNodeStatus {
		sorted = sorted[:maxImagesInNodeStatus]
	}
	var result []corev1.ContainerImage
	for _, image := range sorted {
		names := append(append([]string{}, image.GetRepoDigests()...), image.GetRepoTags()...)
		if len(names) > maxNamesPerImageInNodeStatus {
			names = names[:maxNamesPerImageInNodeStatus]
		}
		result = append(result, corev1.ContainerImage{Names: names, SizeBytes: int64(image.GetSize())})
	}
	return result
}
