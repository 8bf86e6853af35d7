package runtime

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// PodEnv is what the rest of nodelet has prepared for a pod before the
// runtime starts it.
type PodEnv struct {
	// CgroupParent is the pod's cgroup, passed to the sandbox.
	CgroupParent string
	// PodCgroups reads and writes the limits of the pod's cgroup, which a
	// resize changes (package cgroups' Manager); nil leaves them alone.
	PodCgroups PodCgroups
	// VolumePaths maps each volume of the pod to the host folder that holds
	// it. A volume missing here cannot be mounted.
	VolumePaths map[string]string
	// ExtraSupplementalGroups are groups every container gets beyond the
	// pod's own, for its volumes (package volume).
	ExtraSupplementalGroups []int64
	// SELinuxRelabel are the volumes whose mounts the runtime relabels
	// for the container (the CRI's selinux_relabel), as the kubelet asks
	// for volumes that are the pod's on a host with SELinux (package
	// volume); none elsewhere.
	SELinuxRelabel map[string]bool
	// PodDir is the pod's own folder under nodelet's root folder. Each
	// container's termination message file and the pod's hosts file are
	// made under it.
	PodDir string

	// HostIPs are the node's IPs, primary first: status.hostIP(s) in env,
	// and the pod's own IPs when it uses the host's network.
	HostIPs []string
	// EnvSources are what the containers to start draw on from the API
	// server (package podenv): ConfigMaps, Secrets, the service
	// variables, the node's allocatable and the pull secrets.
	kubecontainer.EnvSources

	// podIPs are the pod's IPs, which SyncPod fills in once the sandbox
	// exists, for status.podIP(s) in env and the pod's hosts file.
	podIPs []string
	// userNamespace is the pod's own user namespace, which SyncPod fills
	// in for a pod with hostUsers: false; nil is the host's.
	userNamespace *runtimeapi.UserNamespace
}

// withPodIPs returns env with the pod's IPs, which containers may read
// through the downward API: the node's for a pod on the host's network, else
// the new sandbox's, else the kept one's as last read. As in the kubelet, no
// container starts when a new sandbox's IPs cannot be read; the next sync
// finds them on the kept sandbox.
func (m *Manager) withPodIPs(ctx context.Context, pod *corev1.Pod, podStatus *kubecontainer.PodStatus, created bool, sandboxID string, env *PodEnv) (*PodEnv, error) {
	var withIPs PodEnv
	if env != nil {
		withIPs = *env
	}
	switch {
	case pod.Spec.HostNetwork:
		withIPs.podIPs = withIPs.HostIPs
	case created:
		resp, err := m.runtime.PodSandboxStatus(ctx, sandboxID, false)
		if err == nil && resp.GetStatus() == nil {
			err = errors.New("pod sandbox status is nil")
		}
		if err != nil {
			m.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedStatusPodSandBox", "Unable to get pod sandbox status: %v", grpcMessage(err))
			return nil, fmt.Errorf("getting status of new sandbox %s of pod %s: %w", sandboxID, klog.KObj(pod), err)
		}
		sandbox := sandboxFromStatus(resp.GetStatus())
		m.readySandboxes.set(pod.UID, sandbox)
		withIPs.podIPs = sandbox.IPs
	default:
		withIPs.podIPs = podStatus.IPs()
	}
	return &withIPs, nil
}
