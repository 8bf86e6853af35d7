package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// streamOptions are the streams an exec or attach asks for.
type streamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// parseStreamOptions reads the streams asked for, as the API server names
// them towards nodes ("input", "output", "error", "tty"; "1" turns one
// on). A TTY merges stderr into stdout, so stderr is dropped with one.
func parseStreamOptions(query url.Values) (streamOptions, error) {
	opts := streamOptions{
		Stdin:  query.Get("input") == "1",
		Stdout: query.Get("output") == "1",
		Stderr: query.Get("error") == "1",
		TTY:    query.Get("tty") == "1",
	}
	if opts.TTY {
		opts.Stderr = false
	}
	if !opts.Stdin && !opts.Stdout && !opts.Stderr {
		return opts, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return opts, nil
}

// parsePorts reads the ports of a port-forward over WebSocket ("port"
// parameters, each one port or a comma-separated list); over SPDY the
// ports come with each stream instead, and none need be given.
func parsePorts(query url.Values) ([]int32, error) {
	var ports []int32
	for _, given := range query["port"] {
		if given == "" {
			return nil, errors.New(`query parameter "port" cannot be empty`)
		}
		for _, p := range strings.Split(given, ",") {
			port, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %w", given, err)
			}
			if port < 1 {
				return nil, fmt.Errorf("port %q must be > 0", given)
			}
			ports = append(ports, int32(port))
		}
	}
	return ports, nil
}

// serveExec runs a command in a container: the runtime's streaming
// server does it, nodelet relays the connection to it.
func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	namespace, podName := r.PathValue("namespace"), r.PathValue("pod")
	if !s.podExists(w, r, namespace, podName) {
		return
	}
	id, err := s.runningContainer(ctx, namespace, podName, types.UID(r.PathValue("uid")), r.PathValue("container"))
	if err != nil {
		writeStreamingError(w, err)
		return
	}
	resp, err := s.cfg.Runtime.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: id,
		Cmd:         r.URL.Query()["command"],
		Tty:         opts.TTY,
		Stdin:       opts.Stdin,
		Stdout:      opts.Stdout,
		Stderr:      opts.Stderr,
	})
	if err != nil {
		writeStreamingError(w, err)
		return
	}
	s.proxyStream(w, r, resp.Url)
}

// serveAttach attaches to a container's main process. Whether it has a
// TTY was settled when the container was made, from the Pod's spec.
func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	namespace, podName, containerName := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	uid := types.UID(r.PathValue("uid"))
	pod, err := s.getPod(ctx, namespace, podName)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if pod == nil || (uid != "" && pod.UID != uid) {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	spec := podutil.ContainerByName(pod, containerName)
	if spec == nil {
		writeStreamingError(w, fmt.Errorf("container %s not found in pod %s", containerName, podFullName(namespace, podName)))
		return
	}
	id, err := s.runningContainer(ctx, namespace, podName, pod.UID, containerName)
	if err != nil {
		writeStreamingError(w, err)
		return
	}
	resp, err := s.cfg.Runtime.Attach(ctx, &runtimeapi.AttachRequest{
		ContainerId: id,
		Stdin:       opts.Stdin,
		Stdout:      opts.Stdout,
		Stderr:      opts.Stderr && !spec.TTY,
		Tty:         spec.TTY,
	})
	if err != nil {
		writeStreamingError(w, err)
		return
	}
	s.proxyStream(w, r, resp.Url)
}

// servePortForward forwards connections to ports in the pod's network
// namespace, through the runtime.
func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ports, err := parsePorts(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	namespace, podName := r.PathValue("namespace"), r.PathValue("pod")
	uid := types.UID(r.PathValue("uid"))
	pod, err := s.getPod(ctx, namespace, podName)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if pod == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return
	}
	if uid != "" && pod.UID != uid {
		http.Error(w, "pod not found", http.StatusNotFound)
		return
	}
	sandbox, err := s.readySandbox(ctx, namespace, podName, pod.UID)
	if err != nil {
		writeStreamingError(w, err)
		return
	}
	resp, err := s.cfg.Runtime.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: ports})
	if err != nil {
		writeStreamingError(w, err)
		return
	}
	s.proxyStream(w, r, resp.Url)
}

// serveRun runs a command in a container and answers with its output,
// stdout then stderr: the kubelet's /run (the command is the "cmd"
// parameter, split at spaces).
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	namespace, podName := r.PathValue("namespace"), r.PathValue("pod")
	if !s.podExists(w, r, namespace, podName) {
		return
	}
	id, err := s.runningContainer(ctx, namespace, podName, types.UID(r.PathValue("uid")), r.PathValue("container"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cmd := strings.Split(r.URL.Query().Get("cmd"), " ")
	stdout, stderr, err := s.cfg.Runtime.ExecSync(ctx, id, cmd, 0)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(stdout, stderr...))
}

// podExists answers 404 for a pod that is not bound to this node.
func (s *Server) podExists(w http.ResponseWriter, r *http.Request, namespace, name string) bool {
	pod, err := s.getPod(r.Context(), namespace, name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return false
	}
	if pod == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return false
	}
	return true
}

// proxyStream relays the client's upgraded connection (SPDY or WebSocket)
// to the runtime's streaming URL, as the kubelet does: the protocol is
// between the client and the runtime.
func (s *Server) proxyStream(w http.ResponseWriter, r *http.Request, rawURL string) {
	location, err := url.Parse(rawURL)
	if err != nil {
		writeStreamingError(w, fmt.Errorf("the runtime's streaming URL %q: %w", rawURL, err))
		return
	}
	handler := proxy.NewUpgradeAwareHandler(location, nil, false, true, streamResponder{log: klog.FromContext(r.Context())})
	handler.ServeHTTP(w, r)
}

type streamResponder struct {
	log klog.Logger
}

func (s streamResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	s.log.Error(err, "Failed to relay a stream to the runtime")
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// writeStreamingError answers as the kubelet does when it cannot get a
// stream from the runtime: 404 for what the runtime does not know, 429
// when it is too busy, 500 otherwise.
func writeStreamingError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch status.Code(err) {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.ResourceExhausted:
		code = http.StatusTooManyRequests
	}
	http.Error(w, err.Error(), code)
}
