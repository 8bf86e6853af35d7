package volume

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/pod/fieldpath"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// What a volume's files hold, computed from plain values: the objects
// read from the API server and the pod itself. No I/O here.

// checkSupported returns an *UnsupportedVolumeError when nodelet cannot
// set up vol, or some part of it.
func checkSupported(vol *corev1.Volume) error {
	unsupported := func(what string) error {
		return &UnsupportedVolumeError{Volume: vol.Name, What: what}
	}
	switch kind := sourceKind(vol.VolumeSource); kind {
	case "emptyDir":
		switch medium := vol.EmptyDir.Medium; medium {
		case corev1.StorageMediumDefault, corev1.StorageMediumMemory:
		default:
			return unsupported(fmt.Sprintf("emptyDir volumes with medium %s", medium))
		}
	case "hostPath", "configMap", "secret", "downwardAPI", "persistentVolumeClaim", "ephemeral", "csi":
	case "projected":
		for _, source := range vol.Projected.Sources {
			switch kind := sourceKind(source); kind {
			case "serviceAccountToken", "configMap", "secret", "downwardAPI":
			default:
				return unsupported(fmt.Sprintf("projected %s sources", orUnknown(kind)))
			}
		}
	default:
		return unsupported(fmt.Sprintf("%s volumes", orUnknown(kind)))
	}
	return nil
}

// sourceKind names the source set in a one-of struct (VolumeSource,
// VolumeProjection) by its JSON field name, "persistentVolumeClaim" for
// instance, so that sources added to the API later are named too.
func sourceKind(oneOf any) string {
	v := reflect.ValueOf(oneOf)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return ""
}

func orUnknown(kind string) string {
	if kind == "" {
		return "unknown"
	}
	return kind
}

// keyedPayload is the payload of a ConfigMap or Secret: every key, or
// only the listed items. A listed key that is missing is an error unless
// the source is optional. missingKey words the error as the kubelet does
// for this kind of object.
func keyedPayload(data map[string][]byte, items []corev1.KeyToPath, defaultMode int32, optional bool, missingKey func(key string) error) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(data))
	if len(items) == 0 {
		for key, value := range data {
			payload[key] = fileProjection{Data: value, Mode: defaultMode}
		}
		return payload, nil
	}
	for _, item := range items {
		value, ok := data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, missingKey(item.Key)
		}
		payload[item.Path] = fileProjection{Data: value, Mode: modeOr(item.Mode, defaultMode)}
	}
	return payload, nil
}

// configMapPayload is the files of a ConfigMap, Data and BinaryData alike.
func configMapPayload(cm *corev1.ConfigMap, items []corev1.KeyToPath, defaultMode int32, optional bool) (map[string]fileProjection, error) {
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for key, value := range cm.Data {
		data[key] = []byte(value)
	}
	for key, value := range cm.BinaryData {
		data[key] = value
	}
	return keyedPayload(data, items, defaultMode, optional, func(key string) error {
		return fmt.Errorf("configmap references non-existent config key: %s", key)
	})
}

// secretPayload is the files of a Secret.
func secretPayload(secret *corev1.Secret, items []corev1.KeyToPath, defaultMode int32, optional bool) (map[string]fileProjection, error) {
	return keyedPayload(secret.Data, items, defaultMode, optional, func(key string) error {
		return fmt.Errorf("references non-existent secret key: %s", key)
	})
}

// downwardAPIPayload is the files of a downward API source: one per item,
// each holding a field of the pod or a resource of one of its containers.
// allocatable is the node's, which unset limits default to; nil when
// unknown.
func downwardAPIPayload(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode int32, allocatable corev1.ResourceList) (map[string]fileProjection, error) {
	payload := make(map[string]fileProjection, len(items))
	for _, item := range items {
		var (
			value string
			err   error
		)
		switch {
		case item.FieldRef != nil:
			value, err = fieldpath.PodField(pod, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			value, err = fieldpath.ContainerResource(pod, "", item.ResourceFieldRef, allocatable)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		payload[item.Path] = fileProjection{Data: []byte(value), Mode: modeOr(item.Mode, defaultMode)}
	}
	return payload, nil
}

// downwardAPIDigest sums up what the downward API files of a volume (a
// downwardAPI volume's, a projected volume's downwardAPI sources') hold
// for the pod as it is now: "" for a volume without any.
func downwardAPIDigest(pod *corev1.Pod, vol *corev1.Volume, allocatable corev1.ResourceList) string {
	var items []corev1.DownwardAPIVolumeFile
	switch {
	case vol.DownwardAPI != nil:
		items = vol.DownwardAPI.Items
	case vol.Projected != nil:
		for _, source := range vol.Projected.Sources {
			if source.DownwardAPI != nil {
				items = append(items, source.DownwardAPI.Items...)
			}
		}
	}
	if len(items) == 0 {
		return ""
	}
	payload, err := downwardAPIPayload(pod, items, 0, allocatable)
	if err != nil {
		// Set up as it is; the error is reported there.
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, path := range sortedPaths(payload) {
		fmt.Fprintf(&b, "%q=%q\n", path, payload[path].Data)
	}
	return b.String()
}

func hasDownwardAPI(volumes []corev1.Volume) bool {
	for i := range volumes {
		if volumes[i].DownwardAPI != nil {
			return true
		}
		if volumes[i].Projected != nil {
			for _, source := range volumes[i].Projected.Sources {
				if source.DownwardAPI != nil {
					return true
				}
			}
		}
	}
	return false
}

func sortedPaths(payload map[string]fileProjection) []string {
	paths := make([]string, 0, len(payload))
	for path := range payload {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	return paths
}

// memoryVolumeSize is the size of an emptyDir of medium Memory, as the
// kubelet sizes it: what the pod may use of the node's memory (its memory
// limit, else the node's allocatable), or the volume's sizeLimit when that
// is smaller. Zero means unknown: the kernel's default then applies.
func memoryVolumeSize(pod *corev1.Pod, sizeLimit *resource.Quantity, allocatable corev1.ResourceList) int64 {
	var size int64
	if memory, ok := allocatable[corev1.ResourceMemory]; ok {
		size = memory.Value()
	}
	if limit := podMemoryLimit(pod); limit > 0 && (size == 0 || limit < size) {
		size = limit
	}
	if sizeLimit != nil {
		if limit := sizeLimit.Value(); limit > 0 && (size == 0 || limit < size) {
			size = limit
		}
	}
	return size
}

// podMemoryLimit is the pod's memory limit, as its cgroup gets it: its
// pod-level limit, else the larger of what its regular containers and
// sidecars use together and what its init containers use at most (each
// with the sidecars started before it), plus its overhead; zero when a
// container has no limit.
func podMemoryLimit(pod *corev1.Pod) int64 {
	if pod.Spec.Resources != nil {
		if limit, ok := pod.Spec.Resources.Limits[corev1.ResourceMemory]; ok && !limit.IsZero() {
			return limit.Value()
		}
	}
	limitOf := func(c *corev1.Container) (int64, bool) {
		limit, ok := c.Resources.Limits[corev1.ResourceMemory]
		return limit.Value(), ok && !limit.IsZero()
	}
	var running, sidecars, initPeak int64
	for i := range pod.Spec.Containers {
		limit, ok := limitOf(&pod.Spec.Containers[i])
		if !ok {
			return 0
		}
		running += limit
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		limit, ok := limitOf(c)
		if !ok {
			return 0
		}
		if podutil.IsSidecar(c) {
			// A sidecar keeps running beside what starts after it.
			running += limit
			sidecars += limit
			initPeak = max(initPeak, sidecars)
		} else {
			initPeak = max(initPeak, limit+sidecars)
		}
	}
	total := max(running, initPeak)
	if overhead, ok := pod.Spec.Overhead[corev1.ResourceMemory]; ok {
		total += overhead.Value()
	}
	return total
}

func modeOr(mode *int32, defaultMode int32) int32 {
	if mode != nil {
		return *mode
	}
	return defaultMode
}
