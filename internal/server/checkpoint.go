package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// serveCheckpoint checkpoints a running container through the runtime
// (CRI CheckpointContainer) into <rootDir>/checkpoints, as the kubelet's
// /checkpoint: a runtime that cannot (containerd 1.6, or one without
// CRIU) answers why, and the request fails with it.
func (s *Server) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	namespace, podName, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	pod, err := s.getPod(ctx, namespace, podName)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if pod == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %v does not exist", container), http.StatusNotFound)
		return
	}
	req := &runtimeapi.CheckpointContainerRequest{}
	if timeouts := r.URL.Query()["timeout"]; len(timeouts) > 0 {
		// The last one given wins, as the kubelet reads it.
		timeout, err := strconv.ParseInt(timeouts[len(timeouts)-1], 10, 64)
		if err != nil {
			http.Error(w, "cannot parse value of timeout parameter", http.StatusNotFound)
			return
		}
		req.Timeout = timeout
	}
	fail := func(err error) {
		klog.FromContext(ctx).V(1).Info("Checkpoint failed", "pod", klog.KObj(pod), "container", container, "err", err.Error())
		http.Error(w, fmt.Sprintf("checkpointing of %s/%s/%s failed (%v)", namespace, podName, container, err), http.StatusInternalServerError)
	}
	req.ContainerId, err = s.runningContainer(ctx, namespace, podName, pod.UID, container)
	if err != nil {
		fail(err)
		return
	}
	dir := filepath.Join(s.cfg.RootDir, "checkpoints")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
		return
	}
	req.Location = filepath.Join(dir, checkpointName(podFullName(namespace, podName), container, time.Now()))
	if err := s.cfg.Runtime.CheckpointContainer(ctx, req); err != nil {
		fail(err)
		return
	}
	writeJSON(w, r, map[string][]string{"items": {req.Location}})
}

// checkpointName is the kubelet's name of a checkpoint archive.
func checkpointName(podFullName, container string, now time.Time) string {
	return fmt.Sprintf("checkpoint-%s-%s-%s.tar", podFullName, container, now.Format(time.RFC3339))
}

// hasContainer says whether the pod has a container, init or ephemeral
// container of that name.
func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}
