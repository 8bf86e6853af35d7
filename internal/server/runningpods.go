package server

import (
	"net/http"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// serveRunningPods lists what runs on the node as the runtime sees it,
// as the kubelet's /runningpods: whatever the API server says, each pod
// with a ready sandbox or a running container, with those containers'
// names and images.
func (s *Server) serveRunningPods(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sandboxes, err := s.cfg.Runtime.ListPodSandbox(ctx, nil)
	if err == nil {
		var containers []*runtimeapi.Container
		containers, err = s.cfg.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		})
		if err == nil {
			list := runningPods(sandboxes, containers)
			writeJSON(w, r, &list)
			return
		}
	}
	klog.FromContext(ctx).Error(err, "Failed to list the runtime's pods")
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// runningPods groups the running containers by their sandbox's pod: one
// Pod of identity and containers only, as the kubelet's runtime pods
// converted to the API's.
func runningPods(sandboxes []*runtimeapi.PodSandbox, running []*runtimeapi.Container) corev1.PodList {
	bySandbox := map[string][]*runtimeapi.Container{}
	for _, c := range running {
		bySandbox[c.GetPodSandboxId()] = append(bySandbox[c.GetPodSandboxId()], c)
	}
	pods := map[types.UID]*corev1.Pod{}
	for _, sb := range sandboxes {
		containers := bySandbox[sb.GetId()]
		if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY && len(containers) == 0 {
			continue
		}
		md := sb.GetMetadata()
		uid := types.UID(md.GetUid())
		pod := pods[uid]
		if pod == nil {
			pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: md.GetName(), Namespace: md.GetNamespace(), UID: uid}}
			pods[uid] = pod
		}
		for _, c := range containers {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c.GetMetadata().GetName(), Image: c.GetImage().GetImage()})
		}
	}
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{}}
	for _, pod := range pods {
		sort.Slice(pod.Spec.Containers, func(i, j int) bool { return pod.Spec.Containers[i].Name < pod.Spec.Containers[j].Name })
		list.Items = append(list.Items, *pod)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return list
}
