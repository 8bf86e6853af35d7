package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/action"
)

// Lifecycle hooks (postStart, preStop) run as the kubelet runs them: an
// exec through CRI ExecSync, an HTTP GET against the pod, or a sleep. Their
// failures are reported with the kubelet's events, whose messages leave out
// the hook's output lest it leak secrets; the output goes to the container's
// waiting message and nodelet's log.

// ReasonPostStartHookError is the waiting reason of a container whose
// postStart hook failed, as the kubelet reports it.
const ReasonPostStartHookError = "PostStartHookError"

// hookHTTPClient calls httpGet hooks. It follows redirects (as the
// kubelet's hook client does) but never keeps connections.
var hookHTTPClient = &http.Client{Transport: action.NewHTTPTransport()}

// runPostStartHook runs a started container's postStart hook. When it
// fails, the container is killed and the failure becomes its waiting
// reason.
func (m *Manager) runPostStartHook(ctx context.Context, pod *corev1.Pod, container *corev1.Container, id kubecontainer.ContainerID, podIP string) *kubecontainer.ContainerError {
	msg, err := m.runHook(ctx, pod, container, id, container.Lifecycle.PostStart, podIP)
	if err == nil {
		return nil
	}
	klog.FromContext(ctx).Error(err, "Failed to run postStart hook", "pod", klog.KObj(pod), "container", container.Name, "containerID", id.ID)
	m.recorder.Eventf(containerRef(pod, container), corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	if kerr := m.killContainer(ctx, pod, containerKill{ID: id, Name: container.Name, Message: "FailedPostStartHook"}, podIP, nil); kerr != nil {
		klog.FromContext(ctx).Error(kerr, "Failed to kill container after its postStart hook failed", "pod", klog.KObj(pod), "container", container.Name)
	}
	return &kubecontainer.ContainerError{Reason: ReasonPostStartHookError, Message: msg}
}

// runPreStopHook runs a container's preStop hook for at most grace seconds
// and returns the whole seconds it took, which the stop signal then does
// not get. A hook still running when grace runs out is abandoned.
func (m *Manager) runPreStopHook(ctx context.Context, pod *corev1.Pod, container *corev1.Container, id kubecontainer.ContainerID, grace int64, podIP string) int64 {
	log := klog.FromContext(ctx)
	start := m.clock.Now()
	hookCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.runHook(hookCtx, pod, container, id, container.Lifecycle.PreStop, podIP)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			log.Error(err, "Failed to run preStop hook", "pod", klog.KObj(pod), "container", container.Name, "containerID", id.ID)
			m.recorder.Eventf(containerRef(pod, container), corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
		}
	case <-m.clock.After(time.Duration(grace) * time.Second):
		log.V(1).Info("PreStop hook did not finish within the grace period", "pod", klog.KObj(pod), "container", container.Name, "gracePeriod", grace)
	}
	return int64(m.clock.Since(start).Seconds())
}

// runHook runs one lifecycle handler of a container. On failure it also
// returns the kubelet's message for it.
func (m *Manager) runHook(ctx context.Context, pod *corev1.Pod, container *corev1.Container, id kubecontainer.ContainerID, hook *corev1.LifecycleHandler, podIP string) (string, error) {
	switch {
	case hook.Exec != nil:
		output, err := action.RunCommand(ctx, m.runtime, id.ID, hook.Exec.Command, 0)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				hook.Exec.Command, container.Name, podDescription(pod), err, string(output)), err
		}
	case hook.HTTPGet != nil:
		if err := m.runHTTPHook(ctx, pod, container, hook.HTTPGet, podIP); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				hook.HTTPGet.Path, container.Name, podDescription(pod), err), err
		}
	case hook.Sleep != nil:
		if err := action.Sleep(ctx, time.Duration(hook.Sleep.Seconds)*time.Second); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				hook.Sleep.Seconds, container.Name, podDescription(pod), err), err
		}
	default:
		err := fmt.Errorf("invalid handler: %v", hook)
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
	return "", nil
}

// runHTTPHook makes an httpGet hook's request. As the kubelet's hooks, it
// counts any answer as success, whatever its status; an HTTPS request
// answered in plain HTTP is tried again over HTTP.
func (m *Manager) runHTTPHook(ctx context.Context, pod *corev1.Pod, container *corev1.Container, httpGet *corev1.HTTPGetAction, podIP string) error {
	if httpGet.Host == "" && podIP == "" {
		return errors.New("failed to find networking container: the pod has no IP")
	}
	req, err := action.NewHTTPGetRequest(ctx, httpGet, container, podIP, "lifecycle")
	if err != nil {
		return err
	}
	resp, err := hookHTTPClient.Do(req)
	discardBody(resp)
	if isHTTPResponseToHTTPS(err) {
		req = req.Clone(ctx)
		req.URL.Scheme = "http"
		req.Header.Del("Authorization")
		resp, httpErr := hookHTTPClient.Do(req)
		discardBody(resp)
		if httpErr == nil {
			m.recorder.Eventf(pod, corev1.EventTypeWarning, "LifecycleHTTPFallback",
				"request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded", req.URL.Host)
			err = nil
		}
	}
	return err
}

func discardBody(resp *http.Response) {
	if resp == nil {
		return
	}
	// Read a little so that the server sees its answer taken.
	_, _ = io.CopyN(io.Discard, resp.Body, 10<<10)
	resp.Body.Close()
}

func isHTTPResponseToHTTPS(err error) bool {
	var urlErr *url.Error
	return errors.As(err, &urlErr) && strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client")
}

// podDescription names a pod as the kubelet's messages do:
// name_namespace(uid).
func podDescription(pod *corev1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
