package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/klog/v2"
)

// PodEnv is what the rest of nodelet has prepared for a pod before the
// runtime starts it.
type PodEnv struct {
	// CgroupParent is the pod's cgroup, passed to the sandbox.
	CgroupParent string
	// VolumePaths maps each volume of the pod to the host folder that holds
	// it. A volume missing here cannot be mounted.
	VolumePaths map[string]string
	// PodDir is the pod's own folder under nodelet's root folder. Each
	// container's termination message file is made under it.
	PodDir string
}

// SyncResult tells what SyncPod could not do.
type SyncResult struct {
	// SandboxError is set when the sandbox could not be created; containers
	// then keep waiting as ContainerCreating.
	SandboxError error
	// ContainerErrors are start failures by container name, shown as the
	// containers' waiting reasons until a later start succeeds.
	ContainerErrors map[string]*ContainerError
	// Started names the containers started by this sync.
	Started []string
	// ImagePullTime is the time spent making images present, which the pod
	// start latency metric leaves out.
	ImagePullTime time.Duration
	// Err gathers every failure, for logging and requeueing.
	Err error
}

// SyncPod carries out a plan computed by ComputePodActions, in the order of
// PodActions' fields:
//  1. kill the pod if its sandbox is to be replaced;
//  2. kill the containers that must stop;
//  3. create the sandbox if needed;
//  4. start the next init container;
//  5. start the regular containers, once the init containers are done.
//
// It goes on after a failed step where later steps still make sense, and
// reports every failure in the result.
func (m *Manager) SyncPod(ctx context.Context, pod *corev1.Pod, podStatus *PodStatus, actions PodActions, env *PodEnv) SyncResult {
	log := klog.FromContext(ctx)
	result := SyncResult{ContainerErrors: map[string]*ContainerError{}}
	var errs []error

	// Step 1: kill the pod.
	if actions.KillPod && actions.CreateSandbox {
		m.recorder.Eventf(pod, corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
	}
	if actions.KillPod {
		if err := m.KillPod(ctx, pod, podStatus, nil); err != nil {
			result.Err = fmt.Errorf("killing pod %s before creating a new sandbox: %w", klog.KObj(pod), err)
			return result
		}
	} else {
		// Step 2: kill containers.
		for id, kill := range actions.ContainersToKill {
			if err := m.killContainer(ctx, pod, id, kill.Name, kill.Message, nil); err != nil {
				errs = append(errs, err)
			}
		}
	}

	if !actions.CreateSandbox && len(actions.InitContainersToStart) == 0 && len(actions.ContainersToStart) == 0 {
		result.Err = errors.Join(errs...)
		return result
	}

	// Step 3: create the sandbox. Its config is also what containers are
	// created against, so it is made even when the sandbox is kept.
	sandboxConfig, err := m.generateSandboxConfig(pod, actions.Attempt, env)
	if err != nil {
		m.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		result.SandboxError = err
		result.Err = errors.Join(append(errs, fmt.Errorf("generating sandbox config of pod %s: %w", klog.KObj(pod), err))...)
		return result
	}
	sandboxID := actions.SandboxID
	if actions.CreateSandbox {
		id, err := m.createSandbox(ctx, pod, sandboxConfig)
		if err != nil {
			result.SandboxError = err
			result.Err = errors.Join(append(errs, err)...)
			return result
		}
		sandboxID = id
		log.V(1).Info("Created pod sandbox", "pod", klog.KObj(pod), "sandbox", id, "attempt", actions.Attempt)
	}
	if sandboxID == "" {
		result.Err = errors.Join(errs...)
		return result
	}

	start := func(container *corev1.Container, plan ContainerToStart) bool {
		pullTime, cerr := m.startContainer(ctx, pod, sandboxID, sandboxConfig, container, plan, env)
		result.ImagePullTime += pullTime
		if cerr != nil {
			result.ContainerErrors[container.Name] = cerr
			errs = append(errs, fmt.Errorf("starting container %q of pod %s: %w", container.Name, klog.KObj(pod), cerr))
			return false
		}
		result.Started = append(result.Started, container.Name)
		return true
	}

	// Step 4: the next init container. Regular containers wait for it.
	for _, plan := range actions.InitContainersToStart {
		if !start(&pod.Spec.InitContainers[plan.Index], plan) {
			break
		}
	}

	// Step 5: regular containers, each independent of the others' failures.
	for _, plan := range actions.ContainersToStart {
		start(&pod.Spec.Containers[plan.Index], plan)
	}
	result.Err = errors.Join(errs...)
	return result
}

// createSandbox runs a new sandbox for the pod.
func (m *Manager) createSandbox(ctx context.Context, pod *corev1.Pod, config *runtimeapi.PodSandboxConfig) (string, error) {
	if err := ensureDir(config.LogDirectory); err != nil {
		return "", fmt.Errorf("creating log folder of pod %s: %w", klog.KObj(pod), err)
	}
	id, err := m.runtime.RunPodSandbox(ctx, config, m.config.RuntimeHandler)
	if err != nil {
		m.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", grpcMessage(err))
		return "", fmt.Errorf("running sandbox of pod %s: %w", klog.KObj(pod), err)
	}
	return id, nil
}

// startContainer pulls the image, then creates and starts one container,
// recording the kubelet's events along the way.
func (m *Manager) startContainer(ctx context.Context, pod *corev1.Pod, sandboxID string, sandboxConfig *runtimeapi.PodSandboxConfig, container *corev1.Container, plan ContainerToStart, env *PodEnv) (time.Duration, *ContainerError) {
	ref := containerRef(pod, container)

	pullStart := m.clock.Now()
	imageRef, cerr := m.puller.ensureImage(ctx, ref, pod, container, sandboxConfig)
	pullTime := m.clock.Since(pullStart)
	if cerr != nil {
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", cerr.Reason)
		return pullTime, cerr
	}
	cerr = m.createAndStart(ctx, pod, sandboxID, sandboxConfig, container, ref, plan, imageRef, env)
	return pullTime, cerr
}

// createAndStart creates and starts a container whose image is present.
func (m *Manager) createAndStart(ctx context.Context, pod *corev1.Pod, sandboxID string, sandboxConfig *runtimeapi.PodSandboxConfig, container *corev1.Container, ref *corev1.ObjectReference, plan ContainerToStart, imageRef string, env *PodEnv) *ContainerError {
	config, err := m.generateContainerConfig(pod, container, plan, imageRef, env)
	if err != nil {
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return &ContainerError{Reason: ReasonCreateContainerConfigError, Message: err.Error()}
	}
	if err := ensureDir(containerLogDir(sandboxConfig.LogDirectory, container.Name)); err != nil {
		return &ContainerError{Reason: ReasonCreateContainerConfigError, Message: err.Error()}
	}

	id, err := m.runtime.CreateContainer(ctx, sandboxID, config, sandboxConfig)
	if err != nil {
		msg := grpcMessage(err)
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", msg)
		return &ContainerError{Reason: ReasonCreateContainerError, Message: msg}
	}
	m.recorder.Eventf(ref, corev1.EventTypeNormal, "Created", "Container created")

	if err := m.runtime.StartContainer(ctx, id); err != nil {
		msg := grpcMessage(err)
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", msg)
		return &ContainerError{Reason: ReasonRunContainerError, Message: msg}
	}
	m.recorder.Eventf(ref, corev1.EventTypeNormal, "Started", "Container started")

	m.linkContainerLog(ctx, pod, container.Name, id, sandboxConfig.LogDirectory, config.LogPath)
	return nil
}

// KillPod stops every running container of the pod, all at once, each
// within its grace period, then stops its sandboxes. pod may be nil for a
// runtime pod whose Pod is gone: the grace period then comes from the
// containers' annotations. gracePeriodOverride, when set, replaces the
// pod's grace period (a delete's own).
func (m *Manager) KillPod(ctx context.Context, pod *corev1.Pod, podStatus *PodStatus, gracePeriodOverride *int64) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range podStatus.RunningContainers() {
		wg.Add(1)
		go func(c *ContainerStatus) {
			defer wg.Done()
			grace := gracePeriodOverride
			if pod == nil && grace == nil {
				seconds := int64(c.TerminationGracePeriod.Seconds())
				grace = &seconds
			}
			if err := m.killContainer(ctx, pod, c.ID, c.Name, "", grace); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, sb := range podStatus.Sandboxes {
		if sb.State != SandboxReady {
			continue
		}
		if err := m.runtime.StopPodSandbox(ctx, sb.ID); err != nil && !crierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stopping sandbox %s of pod %s/%s: %w", sb.ID, podStatus.Namespace, podStatus.Name, err))
		}
	}
	return errors.Join(errs...)
}

// minimumGracePeriodSeconds keeps a zero grace period from skipping SIGTERM
// altogether, as in the kubelet.
const minimumGracePeriodSeconds = 2

// killContainer stops one container within its grace period.
func (m *Manager) killContainer(ctx context.Context, pod *corev1.Pod, id ContainerID, name, message string, gracePeriodOverride *int64) error {
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod != nil {
		grace = terminationGracePeriodSeconds(pod)
	}
	if gracePeriodOverride != nil {
		grace = *gracePeriodOverride
	}
	if grace < minimumGracePeriodSeconds {
		grace = minimumGracePeriodSeconds
	}
	if message == "" {
		message = fmt.Sprintf("Stopping container %s", name)
	}
	if pod != nil {
		if container := containerSpec(pod, name); container != nil {
			m.recorder.Eventf(containerRef(pod, container), corev1.EventTypeNormal, "Killing", "%s", message)
		}
	}
	klog.FromContext(ctx).V(1).Info("Stopping container", "container", name, "containerID", id.ID, "gracePeriod", grace)
	if err := m.runtime.StopContainer(ctx, id.ID, grace); err != nil && !crierrors.IsNotFound(err) {
		return fmt.Errorf("stopping container %q (%s): %w", name, id.ID, err)
	}
	return nil
}

// containerSpec finds a container of the pod by name, init containers
// included.
func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// grpcMessage is the runtime's own words, without gRPC's prefix.
func grpcMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
