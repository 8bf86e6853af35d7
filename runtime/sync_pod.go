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

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/pod/podstart"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// SyncResult tells what SyncPod could not do.
type SyncResult struct {
	// SandboxError is set when the sandbox could not be created; containers
	// then keep waiting as ContainerCreating.
	SandboxError error
	// ContainerErrors are start failures by container name, shown as the
	// containers' waiting reasons until a later start succeeds.
	ContainerErrors map[string]*kubecontainer.ContainerError
	// Started names the containers started by this sync.
	Started []string
	// ImagePullTime is the time spent making images present, which the pod
	// start latency metric leaves out.
	ImagePullTime time.Duration
	// ResizeErr is set when an in-place resize could not be applied
	// (fully); the next sync tries again.
	ResizeErr error
	// Err gathers every failure, for logging and requeueing.
	Err error
}

// SyncPod carries out a plan computed by ComputePodActions, in the order of
// PodActions' fields:
//  1. kill the pod if its sandbox is to be replaced (or it has nothing left
//     to run);
//  2. kill the containers that must stop;
//  3. create the sandbox if needed;
//  4. start the ephemeral containers;
//  5. start the init containers: the next one, and sidecars;
//  6. resize running containers in place, and the pod's cgroup;
//  7. start the regular containers, once the init containers are done.
//
// Each container's postStart hook runs right after its start. SyncPod goes
// on after a failed step where later steps still make sense, and reports
// every failure in the result.
func (m *Manager) SyncPod(ctx context.Context, pod *corev1.Pod, podStatus *kubecontainer.PodStatus, actions PodActions, env *PodEnv) SyncResult {
	log := klog.FromContext(ctx)
	result := SyncResult{ContainerErrors: map[string]*kubecontainer.ContainerError{}}
	var errs []error

	// Step 1: kill the pod.
	if actions.KillPod && actions.CreateSandbox {
		m.recorder.Eventf(pod, corev1.EventTypeNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
	}
	if actions.KillPod {
		if err := m.KillPod(ctx, pod, podStatus, nil); err != nil {
			result.Err = fmt.Errorf("killing pod %s: %w", klog.KObj(pod), err)
			return result
		}
	} else {
		// Step 2: kill containers.
		podIP := firstIP(podStatus.IPs())
		for id, kill := range actions.ContainersToKill {
			if err := m.killContainer(ctx, pod, containerKill{ID: id, Name: kill.Name, Message: kill.Message, Reason: kill.Reason}, podIP, nil); err != nil {
				errs = append(errs, err)
			}
		}
	}

	resize := func() { errs = m.syncResize(ctx, pod, podStatus, actions, env, &result, errs) }
	if !actions.CreateSandbox && len(actions.EphemeralContainersToStart) == 0 &&
		len(actions.InitContainersToStart) == 0 && len(actions.ContainersToStart) == 0 {
		resize()
		result.Err = errors.Join(errs...)
		return result
	}

	// Step 3: create the sandbox. Its config is also what containers are
	// created against, so it is made even when the sandbox is kept. A new
	// sandbox's handler is checked first: a pod the handler cannot give a
	// user namespace takes no ID range.
	sandboxFailed := func(what string, err error) SyncResult {
		m.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		result.SandboxError = err
		result.Err = errors.Join(append(errs, fmt.Errorf("%s of pod %s: %w", what, klog.KObj(pod), err))...)
		return result
	}
	var handler string
	var err error
	if actions.CreateSandbox {
		if handler, err = m.sandboxRuntimeHandler(ctx, pod); err != nil {
			return sandboxFailed("creating sandbox", err)
		}
	}
	if env, err = m.withUserNamespace(pod, env); err != nil {
		return sandboxFailed("creating sandbox", err)
	}
	sandboxConfig, err := m.generateSandboxConfig(pod, actions.Attempt, env)
	if err != nil {
		return sandboxFailed("generating sandbox config", err)
	}
	sandboxID := actions.SandboxID
	if actions.CreateSandbox {
		id, err := m.createSandbox(ctx, pod, sandboxConfig, handler)
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
	if env, err = m.withPodIPs(ctx, pod, podStatus, actions.CreateSandbox, sandboxID, env); err != nil {
		result.Err = errors.Join(append(errs, err)...)
		return result
	}

	target := containerTarget{sandboxID: sandboxID, sandboxConfig: sandboxConfig, env: env, podIP: firstIP(env.podIPs)}
	start := func(container *corev1.Container, containerType string, plan ContainerToStart, pidTarget string) bool {
		kubeletmetrics.StartedContainersTotal.WithLabelValues(containerType).Inc()
		pullTime, cerr := m.startContainer(ctx, pod, target, container, plan, pidTarget)
		result.ImagePullTime += pullTime
		if cerr != nil {
			kubeletmetrics.StartedContainersErrorsTotal.WithLabelValues(containerType, cerr.Reason).Inc()
			result.ContainerErrors[container.Name] = cerr
			errs = append(errs, fmt.Errorf("starting container %q of pod %s: %w", container.Name, klog.KObj(pod), cerr))
			return false
		}
		result.Started = append(result.Started, container.Name)
		return true
	}

	// Step 4: ephemeral containers, first so that a pod stuck initializing
	// can be debugged.
	for _, plan := range actions.EphemeralContainersToStart {
		ec := &pod.Spec.EphemeralContainers[plan.Index]
		container := (*corev1.Container)(&ec.EphemeralContainerCommon)
		pidTarget, err := targetContainerID(podStatus, ec.TargetContainerName)
		if err != nil {
			m.recorder.Eventf(containerRef(pod, container), corev1.EventTypeWarning, "Failed", "Error: %v", err)
			result.ContainerErrors[container.Name] = &kubecontainer.ContainerError{Reason: kubecontainer.ReasonCreateContainerConfigError, Message: err.Error()}
			errs = append(errs, fmt.Errorf("starting ephemeral container %q of pod %s: %w", container.Name, klog.KObj(pod), err))
			continue
		}
		start(container, kubeletmetrics.EphemeralContainer, plan, pidTarget)
	}

	// Step 5: init containers. A sidecar that fails to start does not hold
	// back the others; any other init container does.
	for _, plan := range actions.InitContainersToStart {
		container := &pod.Spec.InitContainers[plan.Index]
		if !start(container, kubeletmetrics.InitContainer, plan, "") && !podutil.IsSidecar(container) {
			break
		}
	}

	// Step 6: resize in place.
	resize()

	// Step 7: regular containers, each independent of the others' failures.
	for _, plan := range actions.ContainersToStart {
		start(&pod.Spec.Containers[plan.Index], kubeletmetrics.Container, plan, "")
	}
	result.Err = errors.Join(errs...)
	return result
}

// containerTarget is where SyncPod starts containers: the sandbox and what
// containers are created with.
type containerTarget struct {
	sandboxID     string
	sandboxConfig *runtimeapi.PodSandboxConfig
	env           *PodEnv
	// podIP is what an httpGet hook without a host calls.
	podIP string
}

// createSandbox runs a new sandbox for the pod.
func (m *Manager) createSandbox(ctx context.Context, pod *corev1.Pod, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if err := ensureDir(config.LogDirectory); err != nil {
		return "", fmt.Errorf("creating log folder of pod %s: %w", klog.KObj(pod), err)
	}
	if err := m.sandboxStarts.Acquire(ctx, 1); err != nil {
		return "", fmt.Errorf("waiting for a turn to run the sandbox of pod %s: %w", klog.KObj(pod), err)
	}
	podstart.MarkStep(ctx, podstart.StepSandboxTurn, "")
	id, err := m.runtime.RunPodSandbox(ctx, config, handler)
	m.sandboxStarts.Release(1)
	if err != nil {
		m.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", grpcMessage(err))
		return "", fmt.Errorf("running sandbox of pod %s: %w", klog.KObj(pod), err)
	}
	podstart.MarkStep(ctx, podstart.StepSandboxCreated, "")
	return id, nil
}

// startContainer pulls the image, then creates and starts one container,
// recording the kubelet's events along the way. pidTarget is the container
// whose process namespace an ephemeral container joins, if any.
func (m *Manager) startContainer(ctx context.Context, pod *corev1.Pod, target containerTarget, container *corev1.Container, plan ContainerToStart, pidTarget string) (time.Duration, *kubecontainer.ContainerError) {
	ref := containerRef(pod, container)

	pullStart := m.clock.Now()
	imageRef, cerr := m.puller.ensureImage(ctx, ref, pod, container, target.sandboxConfig, target.env.PullSecrets)
	pullTime := m.clock.Since(pullStart)
	if cerr != nil {
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", cerr.Reason)
		return pullTime, cerr
	}
	podstart.MarkStep(ctx, podstart.StepImageReady, container.Name)
	cerr = m.createAndStart(ctx, pod, target, container, ref, plan, imageRef, pidTarget)
	return pullTime, cerr
}

// createAndStart creates and starts a container whose image is present,
// then runs its postStart hook: a hook that fails kills the container.
func (m *Manager) createAndStart(ctx context.Context, pod *corev1.Pod, target containerTarget, container *corev1.Container, ref *corev1.ObjectReference, plan ContainerToStart, imageRef, pidTarget string) *kubecontainer.ContainerError {
	sandboxConfig := target.sandboxConfig
	config, err := m.generateContainerConfig(pod, container, plan, imageRef, target.env)
	if err != nil {
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %v", err)
		return &kubecontainer.ContainerError{Reason: kubecontainer.ReasonCreateContainerConfigError, Message: err.Error()}
	}
	joinProcessNamespace(config, pidTarget)
	if err := ensureDir(containerLogDir(sandboxConfig.LogDirectory, container.Name)); err != nil {
		return &kubecontainer.ContainerError{Reason: kubecontainer.ReasonCreateContainerConfigError, Message: err.Error()}
	}

	id, err := m.runtime.CreateContainer(ctx, target.sandboxID, config, sandboxConfig)
	if err != nil {
		msg := grpcMessage(err)
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", msg)
		return &kubecontainer.ContainerError{Reason: kubecontainer.ReasonCreateContainerError, Message: msg}
	}
	m.recorder.Eventf(ref, corev1.EventTypeNormal, "Created", "Container created")
	podstart.MarkStep(ctx, podstart.StepContainerCreated, container.Name)

	if err := m.runtime.StartContainer(ctx, id); err != nil {
		msg := grpcMessage(err)
		m.recorder.Eventf(ref, corev1.EventTypeWarning, "Failed", "Error: %s", msg)
		return &kubecontainer.ContainerError{Reason: kubecontainer.ReasonRunContainerError, Message: msg}
	}
	m.recorder.Eventf(ref, corev1.EventTypeNormal, "Started", "Container started")
	podstart.MarkStep(ctx, podstart.StepContainerStarted, container.Name)

	m.linkContainerLog(ctx, pod, container.Name, id, sandboxConfig.LogDirectory, config.LogPath)

	if container.Lifecycle != nil && container.Lifecycle.PostStart != nil {
		if cerr := m.runPostStartHook(ctx, pod, container, kubecontainer.ContainerID{Type: m.runtimeName, ID: id}, target.podIP); cerr != nil {
			return cerr
		}
	}
	return nil
}

// joinProcessNamespace puts an ephemeral container into the process
// namespace of the container it targets, unless the pod shares one
// namespace (or the host's) among all its containers anyway.
func joinProcessNamespace(config *runtimeapi.ContainerConfig, targetID string) {
	namespaces := config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if targetID == "" || namespaces == nil || namespaces.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return
	}
	namespaces.Pid = runtimeapi.NamespaceMode_TARGET
	namespaces.TargetId = targetID
}

// targetContainerID is the runtime ID of the container an ephemeral
// container targets ("" for none).
func targetContainerID(status *kubecontainer.PodStatus, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	target := status.LatestContainer(name)
	if target == nil {
		return "", fmt.Errorf("unable to find target container %v", name)
	}
	return target.ID.ID, nil
}

// KillPod stops every running container of the pod, each within its grace
// period, then stops its sandboxes. The containers stop all at once, but
// sidecars wait (within their grace period) for the regular containers to
// stop, and each sidecar for those after it, as in the kubelet. pod may be
// nil for a runtime pod whose Pod is gone: the grace period then comes from
// the containers' annotations. gracePeriodOverride, when set, replaces the
// pod's grace period.
func (m *Manager) KillPod(ctx context.Context, pod *corev1.Pod, podStatus *kubecontainer.PodStatus, gracePeriodOverride *int64) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	running := podStatus.RunningContainers()
	var order *terminationOrder
	if pod != nil && hasSidecar(pod) {
		names := make([]string, 0, len(running))
		for _, c := range running {
			names = append(names, c.Name)
		}
		order = newTerminationOrder(pod, names, m.clock)
	}
	podIP := firstIP(podStatus.IPs())
	for _, c := range running {
		wg.Add(1)
		go func(c *kubecontainer.ContainerStatus) {
			defer wg.Done()
			kill := containerKill{ID: c.ID, Name: c.Name, GracePeriodOverride: gracePeriodOverride}
			if pod == nil && kill.GracePeriodOverride == nil {
				seconds := int64(c.TerminationGracePeriod.Seconds())
				kill.GracePeriodOverride = &seconds
			}
			if err := m.killContainer(ctx, pod, kill, podIP, order); err != nil {
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
		if sb.State != kubecontainer.SandboxReady {
			continue
		}
		err := m.runtime.StopPodSandbox(ctx, sb.ID)
		m.readySandboxes.forget(sb.ID)
		if err != nil && !crierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("stopping sandbox %s of pod %s/%s: %w", sb.ID, podStatus.Namespace, podStatus.Name, err))
		}
	}
	return errors.Join(errs...)
}

// minimumGracePeriodSeconds keeps a zero grace period from skipping SIGTERM
// altogether, as in the kubelet.
const minimumGracePeriodSeconds = 2

// containerKill is one container to stop, and why.
type containerKill struct {
	ID   kubecontainer.ContainerID
	Name string
	// Message is the Killing event's; empty means "Stopping container NAME".
	Message string
	Reason  KillReason
	// GracePeriodOverride replaces the grace period the pod gives.
	GracePeriodOverride *int64
}

// killContainer stops one container as the kubelet does: its preStop hook
// first, then the stop signal with whatever is left of the grace period
// (at least minimumGracePeriodSeconds), then SIGKILL when that runs out.
// With an order, it also waits its turn after the containers that must
// stop before it. podIP is what an httpGet preStop hook without a host
// calls.
func (m *Manager) killContainer(ctx context.Context, pod *corev1.Pod, kill containerKill, podIP string, order *terminationOrder) error {
	if order != nil {
		// Whatever happens, those waiting for this container go on.
		defer order.stopped(kill.Name)
	}
	var container *corev1.Container
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod != nil {
		container = podutil.ContainerByName(pod, kill.Name)
		grace = containerGracePeriodSeconds(pod, container, kill.Reason)
	}
	if kill.GracePeriodOverride != nil {
		grace = *kill.GracePeriodOverride
	}
	message := kill.Message
	if message == "" {
		message = fmt.Sprintf("Stopping container %s", kill.Name)
	}
	if container != nil {
		m.recorder.Eventf(containerRef(pod, container), corev1.EventTypeNormal, "Killing", "%s", message)
	}

	if container != nil && container.Lifecycle != nil && container.Lifecycle.PreStop != nil && grace > 0 {
		grace -= m.runPreStopHook(ctx, pod, container, kill.ID, grace, podIP)
	}
	if order != nil && grace > 0 {
		grace -= order.waitForTurn(kill.Name, grace)
	}
	if grace < minimumGracePeriodSeconds {
		grace = minimumGracePeriodSeconds
	}
	klog.FromContext(ctx).V(1).Info("Stopping container", "container", kill.Name, "containerID", kill.ID.ID, "gracePeriod", grace)
	m.stops.add(kill.ID.ID)
	if err := m.runtime.StopContainer(ctx, kill.ID.ID, grace); err != nil && !crierrors.IsNotFound(err) {
		return fmt.Errorf("stopping container %q (%s): %w", kill.Name, kill.ID.ID, err)
	}
	return nil
}

// containerGracePeriodSeconds is how long a container of the pod gets to
// stop: a delete's own grace period, else the failed probe's own
// terminationGracePeriodSeconds when that is why it is killed, else the
// pod's.
func containerGracePeriodSeconds(pod *corev1.Pod, container *corev1.Container, reason KillReason) int64 {
	if pod.DeletionTimestamp == nil && container != nil {
		var probe *corev1.Probe
		switch reason {
		case KillReasonLivenessProbe:
			probe = container.LivenessProbe
		case KillReasonStartupProbe:
			probe = container.StartupProbe
		}
		if probe != nil && probe.TerminationGracePeriodSeconds != nil {
			return *probe.TerminationGracePeriodSeconds
		}
	}
	return podutil.TerminationGracePeriodSeconds(pod)
}

func firstIP(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}

// grpcMessage is the runtime's own words, without gRPC's prefix.
func grpcMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}
