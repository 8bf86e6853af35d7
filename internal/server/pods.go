package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// servePods lists the Pods bound to this node, as the kubelet's /pods.
func (s *Server) servePods(w http.ResponseWriter, r *http.Request) {
	var all corev1.PodList
	if err := s.cfg.Pods.List(r.Context(), &all); err != nil {
		klog.FromContext(r.Context()).Error(err, "Failed to list the node's pods")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{}}
	for _, pod := range all.Items {
		if pod.Spec.NodeName == s.cfg.NodeName {
			list.Items = append(list.Items, pod)
		}
	}
	writeJSON(w, r, &list)
}

// getPod returns a Pod bound to this node, or nil.
func (s *Server) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := s.cfg.Pods.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod)
	if apierrors.IsNotFound(err) || (err == nil && pod.Spec.NodeName != s.cfg.NodeName) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting pod %s/%s: %w", namespace, name, err)
	}
	return pod, nil
}

// podFullName is the kubelet's name of a pod in its errors: name_namespace.
func podFullName(namespace, name string) string {
	return name + "_" + namespace
}

// runningContainer finds the running instance of a pod's container in the
// runtime (the pod's UID, when given, must match), as the kubelet finds
// the container to exec in or attach to.
func (s *Server) runningContainer(ctx context.Context, namespace, podName string, uid types.UID, container string) (string, error) {
	selector := map[string]string{
		kubecontainer.LabelPodNamespace:  namespace,
		kubecontainer.LabelPodName:       podName,
		kubecontainer.LabelContainerName: container,
	}
	if uid != "" {
		selector[kubecontainer.LabelPodUID] = string(uid)
	}
	containers, err := s.cfg.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: selector,
	})
	if err != nil {
		return "", fmt.Errorf("listing the containers of pod %s: %w", podFullName(namespace, podName), err)
	}
	var newest *runtimeapi.Container
	for _, c := range containers {
		if newest == nil || c.CreatedAt > newest.CreatedAt {
			newest = c
		}
	}
	if newest == nil {
		return "", fmt.Errorf("container not found (%q)", container)
	}
	return newest.Id, nil
}

// readySandbox finds the pod's ready sandbox in the runtime.
func (s *Server) readySandbox(ctx context.Context, namespace, podName string, uid types.UID) (string, error) {
	sandboxes, err := s.cfg.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{kubecontainer.LabelPodUID: string(uid)},
	})
	if err != nil {
		return "", fmt.Errorf("listing the sandboxes of pod %s: %w", podFullName(namespace, podName), err)
	}
	var newest *runtimeapi.PodSandbox
	for _, sb := range sandboxes {
		if newest == nil || sb.CreatedAt > newest.CreatedAt {
			newest = sb
		}
	}
	if newest == nil {
		return "", fmt.Errorf("pod not found (%q)", podFullName(namespace, podName))
	}
	return newest.Id, nil
}

// trimRuntimePrefix turns "containerd://ID" into "ID".
func trimRuntimePrefix(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}
