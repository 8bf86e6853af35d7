package runtime

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/resources/userns"
)

// errNoIDRanges is why a pod with hostUsers: false cannot run when
// nodelet was given no ranges to hand out.
var errNoIDRanges = errors.New("can't set `spec.hostUsers: false`, nodelet has no user namespace ID ranges to allocate")

// withUserNamespace returns env with the pod's user namespace: none (the
// host's) unless the pod has hostUsers: false, then its own range of host
// IDs, mapped from ID 0 for users and groups alike, as the kubelet maps
// it. The range is the one the pod holds, so every container of the pod
// gets its sandbox's.
func (m *Manager) withUserNamespace(pod *corev1.Pod, env *PodEnv) (*PodEnv, error) {
	var with PodEnv
	if env != nil {
		with = *env
	}
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return &with, nil
	}
	if m.config.UserNamespaces == nil {
		return nil, errNoIDRanges
	}
	r, err := m.config.UserNamespaces.PodRange(pod.UID)
	if err != nil {
		return nil, fmt.Errorf("user namespace of pod %s: %w", pod.UID, err)
	}
	with.userNamespace = podUserNamespace(r)
	return &with, nil
}

// podUserNamespace is the CRI user namespace of a pod holding r.
func podUserNamespace(r userns.Range) *runtimeapi.UserNamespace {
	mapping := func() []*runtimeapi.IDMapping {
		return []*runtimeapi.IDMapping{{HostId: r.First, ContainerId: 0, Length: r.Length}}
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping(), Gids: mapping()}
}

// idmapMounts maps every mount of a container in its own user namespace
// as the namespace is mapped (an idmapped mount), as the kubelet does: a
// file owned by host ID N is then seen as N inside the pod, so volumes
// need no change of ownership and fsGroup means inside what it means
// outside.
func idmapMounts(mounts []*runtimeapi.Mount, userNs *runtimeapi.UserNamespace) {
	if userNs == nil || userNs.Mode != runtimeapi.NamespaceMode_POD {
		return
	}
	for _, mount := range mounts {
		mount.UidMappings = userNs.Uids
		mount.GidMappings = userNs.Gids
	}
}
