package prober

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/action"
)

// outcome is what one run of a probe found, in the kubelet's words (they
// show in its event messages).
type outcome string

const (
	outcomeSuccess outcome = "success"
	outcomeWarning outcome = "warning"
	outcomeFailure outcome = "failure"
	outcomeUnknown outcome = "unknown"
)

const (
	// maxProbeRetries is how often a probe that cannot be run at all is
	// tried before the run counts as errored.
	maxProbeRetries = 3
	// maxProbeOutputLength bounds what an exec probe's output or an HTTP
	// answer's body is read for.
	maxProbeOutputLength = 10 << 10
)

// probe runs a container's probe once and records the kubelet's events:
// Unhealthy for a failure (every one, not only those that reach the
// failure threshold) and for an error, ProbeWarning for a redirect not
// followed. An error means no verdict.
func (m *Manager) probe(ctx context.Context, t probeType, spec *corev1.Probe, pod *corev1.Pod, status *corev1.PodStatus, container *corev1.Container, id kubecontainer.ContainerID) (kubecontainer.ProbeResult, error) {
	var (
		result outcome
		output string
		err    error
	)
	for range maxProbeRetries {
		if result, output, err = m.runProbe(ctx, spec, status.PodIP, container, id); err == nil {
			break
		}
	}
	ref := containerRef(pod, container)
	switch {
	case err != nil:
		m.opts.Recorder.Eventf(ref, corev1.EventTypeWarning, "Unhealthy", "%s probe errored and resulted in %s state: %s", t, result, err)
		return kubecontainer.ProbeFailure, err
	case result == outcomeSuccess:
		return kubecontainer.ProbeSuccess, nil
	case result == outcomeWarning:
		m.opts.Recorder.Eventf(ref, corev1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", t, output)
		return kubecontainer.ProbeSuccess, nil
	case result == outcomeFailure:
		m.opts.Recorder.Eventf(ref, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", t, output)
	}
	return kubecontainer.ProbeFailure, nil
}

// runProbe runs the probe's handler once against the container.
func (m *Manager) runProbe(ctx context.Context, spec *corev1.Probe, podIP string, container *corev1.Container, id kubecontainer.ContainerID) (outcome, string, error) {
	timeout := time.Duration(spec.TimeoutSeconds) * time.Second
	switch {
	case spec.Exec != nil:
		command := kubecontainer.ExpandContainerCommandOnlyStatic(spec.Exec.Command, container.Env)
		return execProbe(ctx, m.opts.Runner, id.ID, command, timeout)
	case spec.HTTPGet != nil:
		req, err := action.NewHTTPGetRequest(ctx, spec.HTTPGet, container, podIP, "probe")
		if err != nil {
			return outcomeUnknown, "", err
		}
		client := &http.Client{Timeout: timeout, Transport: m.transport, CheckRedirect: sameHostRedirects}
		return httpProbe(client, req)
	case spec.TCPSocket != nil:
		port, err := action.ResolvePort(spec.TCPSocket.Port, container)
		if err != nil {
			return outcomeUnknown, "", err
		}
		host := spec.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		return tcpProbe(ctx, net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case spec.GRPC != nil:
		service := ""
		if spec.GRPC.Service != nil {
			service = *spec.GRPC.Service
		}
		return grpcProbe(ctx, net.JoinHostPort(podIP, strconv.Itoa(int(spec.GRPC.Port))), service, timeout)
	}
	return outcomeUnknown, "", fmt.Errorf("missing probe handler for %s:%s", container.Name, id)
}

// execProbe runs a command in the container: exit 0 is success, any other
// exit or a timeout a failure; its output (at most 10 KiB) is the message.
func execProbe(ctx context.Context, runner action.CommandRunner, containerID string, command []string, timeout time.Duration) (outcome, string, error) {
	output, err := action.RunCommand(ctx, runner, containerID, command, timeout)
	if len(output) > maxProbeOutputLength {
		output = output[:maxProbeOutputLength]
	}
	exited, code, timedOut := action.CommandOutcome(err)
	switch {
	case exited && code == 0:
		return outcomeSuccess, string(output), nil
	case exited:
		return outcomeFailure, string(output), nil
	case timedOut:
		return outcomeFailure, err.Error(), nil
	}
	return outcomeUnknown, "", err
}

// httpProbe makes the request: a status from 200 to 399 is success (a
// redirect that was not followed only with a warning), anything else, or
// no answer, a failure.
func httpProbe(client *http.Client, req *http.Request) (outcome, string, error) {
	resp, err := client.Do(req)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeOutputLength))
	if err != nil {
		return outcomeFailure, "", err
	}
	switch {
	case resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusMultipleChoices:
		return outcomeSuccess, string(body), nil
	case resp.StatusCode >= http.StatusMultipleChoices && resp.StatusCode < http.StatusBadRequest:
		return outcomeWarning, fmt.Sprintf("Probe terminated redirects, Response body: %v", string(body)), nil
	}
	return outcomeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode), nil
}

// sameHostRedirects follows redirects to the same host only, as the
// kubelet's probes do: a probe must not be sent off to a third party.
func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// tcpProbe succeeds when a connection opens within the timeout.
func tcpProbe(ctx context.Context, addr string, timeout time.Duration) (outcome, string, error) {
	dialer := action.Dialer()
	dialer.Timeout = timeout
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return outcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return outcomeSuccess, "", nil
}

// grpcProbe asks the pod's grpc.health.v1.Health service whether service
// is SERVING, within the timeout. The messages are the kubelet's.
func grpcProbe(ctx context.Context, addr, service string, timeout time.Duration) (outcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Dialing blocks until connected so that a pod that does not listen
	// reads as a connection failure, not as an RPC's error.
	// (grpc.NewClient would connect lazily and blur the two.)
	conn, err := grpc.DialContext(ctx, addr,
		grpc.WithUserAgent("kube-probe/1.36"),
		grpc.WithBlock(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return action.Dialer().DialContext(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return outcomeFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
		}
		return outcomeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if s, ok := status.FromError(err); ok {
			switch s.Code() {
			case codes.Unimplemented:
				return outcomeFailure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", s.Message()), nil
			case codes.DeadlineExceeded:
				return outcomeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return outcomeFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return outcomeSuccess, "service healthy", nil
}

// containerRef points an event at one container of the pod.
func containerRef(pod *corev1.Pod, container *corev1.Container) *corev1.ObjectReference {
	path := fmt.Sprintf("spec.containers{%s}", container.Name)
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == container.Name {
			path = fmt.Sprintf("spec.initContainers{%s}", container.Name)
		}
	}
	return &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion, FieldPath: path,
	}
}
