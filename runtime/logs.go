package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Container logs are laid out as the kubelet lays them out, because log
// shippers and `kubectl logs` tooling read these paths:
//
//	<PodLogDir>/<namespace>_<name>_<uid>/<container>/<restartCount>.log
//	<ContainerLogDir>/<pod>_<namespace>_<container>-<containerID>.log -> the file above

// maxFileNameLength is ext4's limit on one file name.
const maxFileNameLength = 255

func ensureDir(path string) error {
	return os.MkdirAll(path, 0o755)
}

// containerLogDir is the folder of one container's log files in a pod's
// log folder.
func containerLogDir(podLogDir, containerName string) string {
	return filepath.Join(podLogDir, containerName)
}

// containerLogLink is the path of the link to one container instance's log
// file, cut to the file system's name limit as the kubelet cuts it.
func containerLogLink(dir, podName, namespace, containerName, containerID string) string {
	const suffix = ".log"
	name := fmt.Sprintf("%s_%s_%s-%s", podName, namespace, containerName, containerID)
	if len(name) > maxFileNameLength-len(suffix) {
		name = name[:maxFileNameLength-len(suffix)]
	}
	return filepath.Join(dir, name+suffix)
}

// linkContainerLog links a started container's log file from
// ContainerLogDir. A missing link costs log shippers a file, not the
// container its start, so failures are only logged.
func (m *Manager) linkContainerLog(ctx context.Context, pod *corev1.Pod, containerName, containerID, podLogDirectory, logPath string) {
	if m.config.ContainerLogDir == "" {
		return
	}
	log := klog.FromContext(ctx)
	target := filepath.Join(podLogDirectory, logPath)
	// A link to nothing would only wait for garbage collection.
	if _, err := os.Stat(target); errors.Is(err, os.ErrNotExist) {
		log.V(1).Info("Skipped linking a container log that does not exist", "pod", klog.KObj(pod), "container", containerName, "path", target)
		return
	}
	link := containerLogLink(m.config.ContainerLogDir, pod.Name, pod.Namespace, containerName, containerID)
	if err := ensureDir(m.config.ContainerLogDir); err != nil {
		log.Error(err, "Failed to create the container log link folder", "pod", klog.KObj(pod), "container", containerName, "path", m.config.ContainerLogDir)
		return
	}
	if err := os.Symlink(target, link); err != nil && !errors.Is(err, os.ErrExist) {
		log.Error(err, "Failed to link container log", "pod", klog.KObj(pod), "container", containerName, "path", link, "target", target)
	}
}

// removeContainerLog removes one container instance's log files (the live
// one and those rotated from it) and its link. logPath is the log file's path as the runtime reports it in the
// container's status (absolute); empty when there is no file.
func (m *Manager) removeContainerLog(containerName, containerID string, podName, namespace, logPath string) error {
	var errs []error
	if logPath != "" {
		if !filepath.IsAbs(logPath) {
			errs = append(errs, fmt.Errorf("log path %q of container %s is not absolute", logPath, containerID))
		} else {
			// The rotated files (<log>.<time>[.gz]) go with the live one.
			rotated, _ := filepath.Glob(logPath + ".*")
			for _, path := range append([]string{logPath}, rotated...) {
				if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("removing log file of container %s: %w", containerID, err))
				}
			}
		}
	}
	if m.config.ContainerLogDir != "" {
		link := containerLogLink(m.config.ContainerLogDir, podName, namespace, containerName, containerID)
		if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing log link of container %s: %w", containerID, err))
		}
	}
	return errors.Join(errs...)
}

// RemovePodLogs removes a pod's log folder and the links into it. Links of
// another pod with the same name and namespace (a pod created again) point
// elsewhere and stay.
func (m *Manager) RemovePodLogs(namespace, name string, uid types.UID) error {
	dir := podLogDir(m.config.PodLogDir, namespace, name, uid)
	var errs []error
	if m.config.ContainerLogDir != "" {
		entries, err := os.ReadDir(m.config.ContainerLogDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("listing container log links of pod %s/%s: %w", namespace, name, err))
		}
		prefix := name + "_" + namespace + "_"
		for _, entry := range entries {
			if !strings.HasPrefix(entry.Name(), prefix) || entry.Type()&os.ModeSymlink == 0 {
				continue
			}
			link := filepath.Join(m.config.ContainerLogDir, entry.Name())
			target, err := os.Readlink(link)
			if err != nil || !within(dir, target) {
				continue
			}
			if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing log link %s of pod %s/%s: %w", link, namespace, name, err))
			}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing log folder of pod %s/%s: %w", namespace, name, err))
	}
	return errors.Join(errs...)
}

// PodLogs names a pod that has a log folder.
type PodLogs struct {
	Namespace, Name string
	UID             types.UID
}

// ListPodLogs lists the pods that have a log folder, read from the
// folders' names (<namespace>_<name>_<uid>: neither names nor UIDs hold
// an underscore). Housekeeping removes those of pods that are gone: a
// pod whose runtime objects were removed but whose removal reported an
// error (a reply lost, a call timed out after the runtime did it) has no
// runtime record left to remove its logs by.
func (m *Manager) ListPodLogs() ([]PodLogs, error) {
	entries, err := os.ReadDir(m.config.PodLogDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing pod log folders: %w", err)
	}
	var pods []PodLogs
	for _, entry := range entries {
		parts := strings.Split(entry.Name(), "_")
		if !entry.IsDir() || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			continue
		}
		pods = append(pods, PodLogs{Namespace: parts[0], Name: parts[1], UID: types.UID(parts[2])})
	}
	return pods, nil
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// PodLogDir is the folder of a pod's container logs under root, one
// folder per container name inside.
func PodLogDir(root, namespace, name string, uid types.UID) string {
	return podLogDir(root, namespace, name, uid)
}
