package evictionmanager

// A pod's files beside its containers' writable layers — its logs and
// local volumes — measured on disk, and the evictions for the kubelet's
// per-pod local storage limits.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/resources/eviction"
	"github.com/nodelet/nodelet/internal/volume"
)

// LocalStorageMeter measures pods' logs and local volumes.
type LocalStorageMeter struct {
	// PodLogDir is a pod's log folder, one folder per container inside.
	PodLogDir func(pod *corev1.Pod) string
	// VolumeDir is the folder of a pod's volume whose files are on disk;
	// ok is false for the others.
	VolumeDir func(uid types.UID, vol *corev1.Volume) (dir string, ok bool)
}

// Measure is what the pod's logs and local volumes take on disk.
func (m LocalStorageMeter) Measure(pod *corev1.Pod) (eviction.LocalStorage, error) {
	local := eviction.LocalStorage{Volumes: map[string]eviction.DiskUsage{}, Logs: map[string]eviction.DiskUsage{}}
	var errs []error
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !eviction.LocalVolume(vol) {
			continue
		}
		dir, ok := m.VolumeDir(pod.UID, vol)
		if !ok {
			continue
		}
		used, err := diskUsage(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("measuring volume %q of pod %s: %w", vol.Name, klog.KObj(pod), err))
			continue
		}
		local.Volumes[vol.Name] = used
	}
	logDir := m.PodLogDir(pod)
	entries, err := os.ReadDir(logDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("reading the log folder of pod %s: %w", klog.KObj(pod), err))
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		used, err := diskUsage(filepath.Join(logDir, e.Name()))
		if err != nil {
			errs = append(errs, fmt.Errorf("measuring the logs of container %s of pod %s: %w", e.Name(), klog.KObj(pod), err))
			continue
		}
		local.Logs[e.Name()] = used
	}
	return local, errors.Join(errs...)
}

// diskUsage is what a folder's tree takes, as du counts it
// (volume.DiskUsage); a folder not there takes nothing.
func diskUsage(dir string) (eviction.DiskUsage, error) {
	bytes, inodes, err := volume.DiskUsage(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return eviction.DiskUsage{}, nil
	}
	if err != nil {
		return eviction.DiskUsage{}, err
	}
	return eviction.DiskUsage{Bytes: int64(bytes), Inodes: int64(inodes)}, nil
}

// localStorageEviction evicts every active pod over one of its local
// storage limits, as the kubelet does each round before it looks at the
// node's signals, and says whether it evicted any. Only pods that have
// such a limit are measured.
func (m *Manager) localStorageEviction(ctx context.Context, active []*corev1.Pod, now time.Time) bool {
	if m.opts.LocalStorage == nil {
		return false
	}
	var limited []*corev1.Pod
	for _, pod := range active {
		if eviction.HasLocalStorageLimit(pod) {
			if _, ordered := m.Eviction(pod.UID); !ordered {
				limited = append(limited, pod)
			}
		}
	}
	if len(limited) == 0 {
		return false
	}
	usage, err := m.podUsage(ctx, limited, true)
	if err != nil {
		m.opts.Log.Error(err, "Eviction manager: failed to read the pods' usage for their local storage limits")
		return false
	}
	evicted := false
	for _, pod := range limited {
		signal, message, over := eviction.LocalStorageViolation(pod, usage)
		if !over {
			continue
		}
		if !eviction.Evictable(pod) {
			m.opts.Log.Error(nil, "Eviction manager: cannot evict a critical pod", "pod", klog.KObj(pod))
			continue
		}
		m.evict(ctx, pod, Order{
			Reason:             eviction.Reason,
			Message:            message,
			GracePeriodSeconds: eviction.LocalStorageGracePeriodSeconds,
			signal:             signal,
			at:                 now,
			pod:                types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
			withoutCondition:   true,
		})
		evicted = true
	}
	return evicted
}

// podUsage is the pods' usage from the runtime's container stats and,
// with local, their logs and local volumes measured on disk.
func (m *Manager) podUsage(ctx context.Context, pods []*corev1.Pod, local bool) (eviction.Usage, error) {
	usage, err := podUsage(ctx, m.stats)
	if err != nil || !local || m.opts.LocalStorage == nil {
		return usage, err
	}
	for _, pod := range pods {
		measured, err := m.opts.LocalStorage(pod)
		if err != nil {
			// What was measured still counts.
			m.opts.Log.Error(err, "Eviction manager: failed to measure the pod's local storage", "pod", klog.KObj(pod))
		}
		usage[pod.UID] = eviction.WithLocalStorage(usage[pod.UID], measured)
	}
	return usage, nil
}
