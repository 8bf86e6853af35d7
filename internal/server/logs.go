package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/pod/podutil"
	"github.com/nodelet/nodelet/internal/server/logs"
)

// serveContainerLogs serves /containerLogs/{namespace}/{pod}/{container},
// what `kubectl logs` reaches through the API server, with the options of
// v1.PodLogOptions in the query.
func (s *Server) serveContainerLogs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	namespace, podName, containerName := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")

	query := r.URL.Query()
	// "tail" is the old name of tailLines; "all" means no limit.
	if tail := query.Get("tail"); tail != "" {
		query["tailLines"] = []string{tail}
		if tail == "all" {
			delete(query, "tailLines")
		}
	}
	opts, err := decodeLogOptions(query)
	if err != nil {
		http.Error(w, fmt.Sprintf("unable to decode the log options: %v", err), http.StatusBadRequest)
		return
	}
	if err := validateLogOptions(opts); err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}

	pod, err := s.getPod(ctx, namespace, podName)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %q does not exist", podName), http.StatusNotFound)
		return
	}
	if podutil.ContainerByName(pod, containerName) == nil {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", containerName, podName), http.StatusNotFound)
		return
	}
	containerID, err := logContainerID(pod, containerName, opts.Previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := s.cfg.Runtime.ContainerStatus(ctx, containerID, false)
	if err != nil || resp.GetStatus().GetLogPath() == "" {
		klog.FromContext(ctx).V(1).Info("Found no log of a container", "containerID", containerID, "err", fmt.Sprint(err))
		http.Error(w, fmt.Sprintf("unable to retrieve container logs for %s", containerID), http.StatusBadRequest)
		return
	}

	out := newFlushWriter(w)
	var stdout, stderr io.Writer = out, out
	switch stream := ptrValue(opts.Stream); stream {
	case "", corev1.LogStreamAll:
	case corev1.LogStreamStdout:
		stderr = nil
	case corev1.LogStreamStderr:
		stdout = nil
	}
	w.Header().Set("Content-Type", "text/plain")
	err = logs.ReadLogs(ctx, resp.GetStatus().GetLogPath(), readOptions(opts, s.cfg.Clock.Now()), s.containerRunning(containerID), stdout, stderr)
	flushErr := out.Flush()
	switch {
	case err == nil:
		if flushErr != nil {
			klog.FromContext(ctx).V(1).Info("Failed to send a container log", "containerID", containerID, "err", flushErr.Error())
		}
	case ctx.Err() != nil:
		// The client went away.
	case !out.committed:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		klog.FromContext(ctx).Error(err, "Failed to send a container log", "containerID", containerID)
	}
}

// decodeLogOptions reads v1.PodLogOptions from a query, as the API
// server's parameter conversion writes them: booleans are true unless
// "0", "f" or "false"; times are RFC 3339.
func decodeLogOptions(query url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{Container: query.Get("container")}
	boolean := func(name string) bool {
		v, ok := query[name]
		if !ok || len(v) == 0 {
			return false
		}
		switch strings.ToLower(v[0]) {
		case "0", "f", "false":
			return false
		}
		return true
	}
	var errs []error
	integer := func(name string) *int64 {
		v := query.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return nil
		}
		return &n
	}
	opts.Follow = boolean("follow")
	opts.Previous = boolean("previous")
	opts.Timestamps = boolean("timestamps")
	opts.InsecureSkipTLSVerifyBackend = boolean("insecureSkipTLSVerifyBackend")
	opts.SinceSeconds = integer("sinceSeconds")
	opts.TailLines = integer("tailLines")
	opts.LimitBytes = integer("limitBytes")
	if v := query.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("sinceTime: %w", err))
		} else {
			opts.SinceTime = &metav1.Time{Time: t}
		}
	}
	if v, ok := query["stream"]; ok && len(v) > 0 {
		stream := v[0]
		opts.Stream = &stream
	}
	return opts, errors.Join(errs...)
}

// validateLogOptions checks the options as the API validates them.
func validateLogOptions(opts *corev1.PodLogOptions) error {
	var errs []error
	if opts.TailLines != nil && *opts.TailLines < 0 {
		errs = append(errs, fmt.Errorf("tailLines: Invalid value: %d: must be greater than or equal to 0", *opts.TailLines))
	}
	if opts.LimitBytes != nil && *opts.LimitBytes < 1 {
		errs = append(errs, fmt.Errorf("limitBytes: Invalid value: %d: must be greater than 0", *opts.LimitBytes))
	}
	switch {
	case opts.SinceSeconds != nil && opts.SinceTime != nil:
		errs = append(errs, errors.New("at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case opts.SinceSeconds != nil && *opts.SinceSeconds < 1:
		errs = append(errs, fmt.Errorf("sinceSeconds: Invalid value: %d: must be greater than 0", *opts.SinceSeconds))
	}
	if opts.Stream != nil {
		switch *opts.Stream {
		case corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr:
		default:
			errs = append(errs, fmt.Errorf("stream: Unsupported value: %q", *opts.Stream))
		}
		if *opts.Stream != corev1.LogStreamAll && opts.TailLines != nil {
			errs = append(errs, errors.New("`tailLines` and specific `stream` are mutually exclusive for now"))
		}
	}
	return errors.Join(errs...)
}

// readOptions turns the API's options into the reader's, at time now.
func readOptions(opts *corev1.PodLogOptions, now time.Time) logs.Options {
	read := logs.Options{
		TailLines:  opts.TailLines,
		LimitBytes: opts.LimitBytes,
		Follow:     opts.Follow,
		Timestamps: opts.Timestamps,
	}
	switch {
	case opts.SinceSeconds != nil:
		// More seconds than a Duration holds reach back past any log:
		// multiplied, they would wrap into the future.
		if *opts.SinceSeconds <= math.MaxInt64/int64(time.Second) {
			read.Since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
		}
	case opts.SinceTime != nil:
		read.Since = opts.SinceTime.Time
	}
	return read
}

// logContainerID picks the container instance whose log is asked for,
// from the pod's status, as the kubelet does: the previous instance for
// `--previous`, else the running one, else the last one that ran. The
// errors are the kubelet's, which `kubectl logs` shows as they are.
func logContainerID(pod *corev1.Pod, name string, previous bool) (string, error) {
	var status *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				status = &list[i]
			}
		}
	}
	if status == nil {
		return "", fmt.Errorf("container %q in pod %q is not available", name, pod.Name)
	}
	last := status.LastTerminationState.Terminated
	state := status.State
	var id string
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", name, pod.Name)
		}
		id = last.ContainerID
	case state.Running != nil:
		id = status.ContainerID
	case state.Terminated != nil:
		id = state.Terminated.ContainerID
		if id == "" {
			if last == nil || last.ContainerID == "" {
				return "", fmt.Errorf("container %q in pod %q is terminated", name, pod.Name)
			}
			// The next instance did not start: the last one that ran.
			id = last.ContainerID
		}
	case last != nil:
		if last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", name, pod.Name)
		}
		id = last.ContainerID
	case state.Waiting != nil:
		switch reason := state.Waiting.Reason; reason {
		case "ErrImagePull":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", name, pod.Name)
		case "ImagePullBackOff":
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", name, pod.Name)
		default:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %v", name, pod.Name, reason)
		}
	default:
		return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", name, pod.Name)
	}
	return trimRuntimePrefix(id), nil
}

// containerRunning tells a log follower whether the container still runs.
// A runtime that does not answer is taken to still run it: runtimes keep
// containers running while their CRI endpoint restarts.
func (s *Server) containerRunning(id string) logs.RunningFunc {
	return func(ctx context.Context) (bool, error) {
		resp, err := s.cfg.Runtime.ContainerStatus(ctx, id, false)
		switch {
		case crierrors.IsNotFound(err):
			return false, nil
		case status.Code(err) == codes.Unavailable:
			return true, nil
		case err != nil:
			return false, err
		}
		return resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	}
}

// flushWriter buffers a streamed response and sends it at every Flush:
// a follower flushes whenever it waits, so a big log goes out in big
// writes and a followed one line by line.
type flushWriter struct {
	*bufio.Writer
	rw      http.ResponseWriter
	flusher http.Flusher
	// committed is set once anything reached the client, after which the
	// status cannot change.
	committed bool
}

func newFlushWriter(rw http.ResponseWriter) *flushWriter {
	f := &flushWriter{rw: rw}
	f.flusher, _ = rw.(http.Flusher)
	f.Writer = bufio.NewWriterSize(writerFunc(func(p []byte) (int, error) {
		f.committed = true
		return rw.Write(p)
	}), 32<<10)
	return f
}

// Flush sends what is buffered, and the headers if nothing was sent yet:
// a client following a quiet log sees the response begin.
func (f *flushWriter) Flush() error {
	if err := f.Writer.Flush(); err != nil {
		return err
	}
	if f.flusher != nil {
		f.committed = true
		f.flusher.Flush()
	}
	return nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
