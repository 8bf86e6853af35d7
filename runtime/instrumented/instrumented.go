// Package instrumented wraps the CRI services so that every call is
// counted and timed in the kubelet's runtime_operations metrics, under
// the kubelet's operation names: the services' users need not know.
package instrumented

import (
	"context"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// RuntimeService records each call of rs. Every method is spelled out,
// none promoted from an embedded service, so that a method the CRI
// interface gains fails to compile here instead of going uncounted.
func RuntimeService(rs cri.RuntimeService) cri.RuntimeService { return &runtimeService{rs: rs} }

// ImageService records each call of is.
func ImageService(is cri.ImageManagerService) cri.ImageManagerService {
	return &imageService{is: is}
}

// observe is deferred with the call's start and a pointer to its error,
// read when the call returns.
func observe(operation string, start time.Time, err *error) {
	kubeletmetrics.ObserveRuntimeOperation(operation, start, *err)
}

type runtimeService struct{ rs cri.RuntimeService }

var _ cri.RuntimeService = (*runtimeService)(nil)

func (s *runtimeService) Version(ctx context.Context, apiVersion string) (_ *runtimeapi.VersionResponse, err error) {
	defer observe("version", time.Now(), &err)
	return s.rs.Version(ctx, apiVersion)
}

func (s *runtimeService) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (_ string, err error) {
	defer observe("create_container", time.Now(), &err)
	return s.rs.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
}

func (s *runtimeService) StartContainer(ctx context.Context, containerID string) (err error) {
	defer observe("start_container", time.Now(), &err)
	return s.rs.StartContainer(ctx, containerID)
}

func (s *runtimeService) StopContainer(ctx context.Context, containerID string, timeout int64) (err error) {
	defer observe("stop_container", time.Now(), &err)
	return s.rs.StopContainer(ctx, containerID, timeout)
}

func (s *runtimeService) RemoveContainer(ctx context.Context, containerID string) (err error) {
	defer observe("remove_container", time.Now(), &err)
	return s.rs.RemoveContainer(ctx, containerID)
}

func (s *runtimeService) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) (_ []*runtimeapi.Container, err error) {
	defer observe("list_containers", time.Now(), &err)
	return s.rs.ListContainers(ctx, filter)
}

func (s *runtimeService) ContainerStatus(ctx context.Context, containerID string, verbose bool) (_ *runtimeapi.ContainerStatusResponse, err error) {
	defer observe("container_status", time.Now(), &err)
	return s.rs.ContainerStatus(ctx, containerID, verbose)
}

func (s *runtimeService) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) (err error) {
	defer observe("update_container", time.Now(), &err)
	return s.rs.UpdateContainerResources(ctx, containerID, resources)
}

func (s *runtimeService) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (_ []byte, _ []byte, err error) {
	defer observe("exec_sync", time.Now(), &err)
	return s.rs.ExecSync(ctx, containerID, cmd, timeout)
}

func (s *runtimeService) Exec(ctx context.Context, request *runtimeapi.ExecRequest) (_ *runtimeapi.ExecResponse, err error) {
	defer observe("exec", time.Now(), &err)
	return s.rs.Exec(ctx, request)
}

func (s *runtimeService) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (_ *runtimeapi.AttachResponse, err error) {
	defer observe("attach", time.Now(), &err)
	return s.rs.Attach(ctx, req)
}

func (s *runtimeService) ReopenContainerLog(ctx context.Context, containerID string) (err error) {
	defer observe("reopen_container_log", time.Now(), &err)
	return s.rs.ReopenContainerLog(ctx, containerID)
}

func (s *runtimeService) CheckpointContainer(ctx context.Context, options *runtimeapi.CheckpointContainerRequest) (err error) {
	defer observe("checkpoint_container", time.Now(), &err)
	return s.rs.CheckpointContainer(ctx, options)
}

// GetContainerEvents is a stream: its count says how often it was
// opened, its duration how long each stream lasted.
func (s *runtimeService) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) (err error) {
	defer observe("get_container_events", time.Now(), &err)
	return s.rs.GetContainerEvents(ctx, ch, established)
}

func (s *runtimeService) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (_ string, err error) {
	defer observe("run_podsandbox", time.Now(), &err)
	return s.rs.RunPodSandbox(ctx, config, runtimeHandler)
}

func (s *runtimeService) StopPodSandbox(ctx context.Context, podSandboxID string) (err error) {
	defer observe("stop_podsandbox", time.Now(), &err)
	return s.rs.StopPodSandbox(ctx, podSandboxID)
}

func (s *runtimeService) RemovePodSandbox(ctx context.Context, podSandboxID string) (err error) {
	defer observe("remove_podsandbox", time.Now(), &err)
	return s.rs.RemovePodSandbox(ctx, podSandboxID)
}

func (s *runtimeService) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (_ *runtimeapi.PodSandboxStatusResponse, err error) {
	defer observe("podsandbox_status", time.Now(), &err)
	return s.rs.PodSandboxStatus(ctx, podSandboxID, verbose)
}

func (s *runtimeService) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) (_ []*runtimeapi.PodSandbox, err error) {
	defer observe("list_podsandbox", time.Now(), &err)
	return s.rs.ListPodSandbox(ctx, filter)
}

func (s *runtimeService) PortForward(ctx context.Context, request *runtimeapi.PortForwardRequest) (_ *runtimeapi.PortForwardResponse, err error) {
	defer observe("port_forward", time.Now(), &err)
	return s.rs.PortForward(ctx, request)
}

func (s *runtimeService) UpdatePodSandboxResources(ctx context.Context, request *runtimeapi.UpdatePodSandboxResourcesRequest) (_ *runtimeapi.UpdatePodSandboxResourcesResponse, err error) {
	defer observe("update_podsandbox_resources", time.Now(), &err)
	return s.rs.UpdatePodSandboxResources(ctx, request)
}

func (s *runtimeService) CheckpointPod(ctx context.Context, options *runtimeapi.CheckpointPodRequest) (err error) {
	defer observe("checkpoint_pod", time.Now(), &err)
	return s.rs.CheckpointPod(ctx, options)
}

func (s *runtimeService) RestorePod(ctx context.Context, options *runtimeapi.RestorePodRequest) (_ *runtimeapi.RestorePodResponse, err error) {
	defer observe("restore_pod", time.Now(), &err)
	return s.rs.RestorePod(ctx, options)
}

func (s *runtimeService) ContainerStats(ctx context.Context, containerID string) (_ *runtimeapi.ContainerStats, err error) {
	defer observe("container_stats", time.Now(), &err)
	return s.rs.ContainerStats(ctx, containerID)
}

func (s *runtimeService) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) (_ []*runtimeapi.ContainerStats, err error) {
	defer observe("list_container_stats", time.Now(), &err)
	return s.rs.ListContainerStats(ctx, filter)
}

func (s *runtimeService) PodSandboxStats(ctx context.Context, podSandboxID string) (_ *runtimeapi.PodSandboxStats, err error) {
	defer observe("podsandbox_stats", time.Now(), &err)
	return s.rs.PodSandboxStats(ctx, podSandboxID)
}

func (s *runtimeService) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) (_ []*runtimeapi.PodSandboxStats, err error) {
	defer observe("list_podsandbox_stats", time.Now(), &err)
	return s.rs.ListPodSandboxStats(ctx, filter)
}

func (s *runtimeService) ListMetricDescriptors(ctx context.Context) (_ []*runtimeapi.MetricDescriptor, err error) {
	defer observe("list_metric_descriptors", time.Now(), &err)
	return s.rs.ListMetricDescriptors(ctx)
}

func (s *runtimeService) ListPodSandboxMetrics(ctx context.Context) (_ []*runtimeapi.PodSandboxMetrics, err error) {
	defer observe("list_podsandbox_metrics", time.Now(), &err)
	return s.rs.ListPodSandboxMetrics(ctx)
}

func (s *runtimeService) UpdateRuntimeConfig(ctx context.Context, runtimeConfig *runtimeapi.RuntimeConfig) (err error) {
	defer observe("update_runtime_config", time.Now(), &err)
	return s.rs.UpdateRuntimeConfig(ctx, runtimeConfig)
}

func (s *runtimeService) Status(ctx context.Context, verbose bool) (_ *runtimeapi.StatusResponse, err error) {
	defer observe("status", time.Now(), &err)
	return s.rs.Status(ctx, verbose)
}

func (s *runtimeService) RuntimeConfig(ctx context.Context) (_ *runtimeapi.RuntimeConfigResponse, err error) {
	defer observe("runtime_config", time.Now(), &err)
	return s.rs.RuntimeConfig(ctx)
}

func (s *runtimeService) Close(ctx context.Context) (err error) {
	defer observe("close", time.Now(), &err)
	return s.rs.Close(ctx)
}

type imageService struct{ is cri.ImageManagerService }

var _ cri.ImageManagerService = (*imageService)(nil)

func (s *imageService) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) (_ []*runtimeapi.Image, err error) {
	defer observe("list_images", time.Now(), &err)
	return s.is.ListImages(ctx, filter)
}

func (s *imageService) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (_ *runtimeapi.ImageStatusResponse, err error) {
	defer observe("image_status", time.Now(), &err)
	return s.is.ImageStatus(ctx, image, verbose)
}

func (s *imageService) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (_ string, err error) {
	defer observe("pull_image", time.Now(), &err)
	return s.is.PullImage(ctx, image, auth, podSandboxConfig)
}

func (s *imageService) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) (err error) {
	defer observe("remove_image", time.Now(), &err)
	return s.is.RemoveImage(ctx, image)
}

func (s *imageService) ImageFsInfo(ctx context.Context) (_ *runtimeapi.ImageFsInfoResponse, err error) {
	defer observe("image_fs_info", time.Now(), &err)
	return s.is.ImageFsInfo(ctx)
}

func (s *imageService) Close(ctx context.Context) (err error) {
	defer observe("close", time.Now(), &err)
	return s.is.Close(ctx)
}
