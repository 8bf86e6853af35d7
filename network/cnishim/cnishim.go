// Package cnishim is the CNI plugin nodelet ships for its `agent` network
// mode, and the protocol it speaks with nodelet. The runtime (containerd,
// CRI-O) runs CNI itself and cannot be handed a network namespace set up
// elsewhere, so its only CNI configuration names this plugin; the plugin
// forwards each call it receives over a unix socket to nodelet, which runs
// the node's real network configuration and answers with the real result.
//
// The plugin is executed for every CNI call, so it imports nothing but the
// standard library and the CNI types: it starts in a few milliseconds.
package cnishim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

// PluginType is the plugin's name: its binary's name in the runtime's CNI
// bin folder and the "type" of its configuration.
const PluginType = "nodelet-cni"

// Path is the HTTP path the calls are posted to on the socket.
const Path = "/cni"

// SupportedVersions are the CNI spec versions the plugin answers VERSION
// with. The results it returns are nodelet's, converted to the version of
// the plugin's configuration.
var SupportedVersions = []string{"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"}

// NetConf is the plugin's own configuration, as the runtime passes it on
// stdin.
type NetConf struct {
	types.PluginConf
	// Socket is nodelet's socket. Required.
	Socket string `json:"socket"`
}

// Request is one CNI call as the plugin received it: the CNI_* variables
// and the configuration from stdin.
type Request struct {
	Command     string `json:"command"`
	ContainerID string `json:"containerID,omitempty"`
	NetNS       string `json:"netns,omitempty"`
	IfName      string `json:"ifName,omitempty"`
	// Args is CNI_ARGS, unparsed.
	Args string `json:"args,omitempty"`
	// Config is the plugin's stdin: its configuration, with the runtime's
	// runtimeConfig and, for GC, the valid attachments.
	Config json.RawMessage `json:"config"`
}

// Response is nodelet's answer: a CNI result in the configuration's
// version (ADD), nothing (CHECK, DEL, GC, STATUS), or a CNI error.
type Response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *types.Error    `json:"error,omitempty"`
}

// How long the plugin waits for nodelet. A teardown is never held for
// long: the runtime cannot remove a sandbox whose DEL fails, so a DEL that
// cannot reach nodelet in time succeeds, and nodelet's garbage collection
// deletes the attachment from its records later.
const (
	dialTimeout = 2 * time.Second
	addTimeout  = 4 * time.Minute
	delTimeout  = 20 * time.Second
	// CHECK, GC and STATUS.
	otherTimeout = time.Minute
)

// Run is the plugin's main: it reads the CNI_* variables through getenv and
// the configuration from stdin, writes the result or a CNI error to stdout
// and notes to stderr, and returns the exit code.
func Run(getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	command := getenv("CNI_COMMAND")
	if command == "VERSION" {
		return printJSON(stdout, map[string]any{"cniVersion": SupportedVersions[len(SupportedVersions)-1], "supportedVersions": SupportedVersions})
	}
	config, err := io.ReadAll(stdin)
	if err != nil {
		return printError(stdout, types.NewError(types.ErrIOFailure, "reading the network configuration from stdin", err.Error()))
	}
	var conf NetConf
	if err := json.Unmarshal(config, &conf); err != nil {
		return printError(stdout, types.NewError(types.ErrDecodingFailure, "decoding the network configuration", err.Error()))
	}
	if conf.Socket == "" {
		return printError(stdout, types.NewError(types.ErrInvalidNetworkConfig, "the network configuration names no nodelet socket (\"socket\")", ""))
	}
	switch command {
	case "ADD", "DEL", "CHECK", "GC", "STATUS":
	default:
		return printError(stdout, types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("unknown CNI_COMMAND %q", command), ""))
	}
	req := Request{
		Command:     command,
		ContainerID: getenv("CNI_CONTAINERID"),
		NetNS:       getenv("CNI_NETNS"),
		IfName:      getenv("CNI_IFNAME"),
		Args:        getenv("CNI_ARGS"),
		Config:      config,
	}

	timeout := otherTimeout
	switch command {
	case "ADD":
		timeout = addTimeout
	case "DEL":
		timeout = delTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := Call(ctx, conf.Socket, req)
	if err != nil {
		if command == "DEL" || command == "GC" {
			// Never hold a teardown: nodelet deletes what its records
			// still hold once it is back.
			fmt.Fprintf(stderr, "nodelet-cni: %s of container %s left to nodelet's garbage collection: %v\n", command, req.ContainerID, err)
			return 0
		}
		return printError(stdout, types.NewError(types.ErrTryAgainLater, err.Error(), ""))
	}
	if resp.Error != nil {
		return printError(stdout, resp.Error)
	}
	if command == "ADD" {
		if len(resp.Result) == 0 {
			return printError(stdout, types.NewError(types.ErrInternal, "nodelet answered ADD without a result", ""))
		}
		_, err := stdout.Write(append(bytes.TrimSpace(resp.Result), '\n'))
		if err != nil {
			return 1
		}
	}
	return 0
}

// ErrNotServing is wrapped by Call's error when nothing answers on the
// socket: nodelet is not running, or not in agent mode.
var ErrNotServing = errors.New("nodelet is not serving CNI")

// Call sends one request to nodelet on socket and returns its answer.
func Call(ctx context.Context, socket string, req Request) (*Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	dialer := net.Dialer{Timeout: dialTimeout}
	var dialed atomic.Bool
	client := http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, "unix", socket)
			dialed.Store(err == nil)
			return conn, err
		},
		DisableKeepAlives: true,
	}}
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://nodelet"+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpResp, err := client.Do(httpReq)
	if err != nil {
		if !dialed.Load() {
			return nil, fmt.Errorf("%w on %s (is nodelet running with --network-mode=agent?): %w", ErrNotServing, socket, err)
		}
		return nil, fmt.Errorf("nodelet did not answer %s of container %s on %s: %w", req.Command, req.ContainerID, socket, err)
	}
	defer httpResp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(httpResp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading nodelet's answer to %s of container %s: %w", req.Command, req.ContainerID, err)
	}
	var resp Response
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("nodelet answered %s of container %s with %s: %q", req.Command, req.ContainerID, httpResp.Status, truncate(data, 200))
	}
	return &resp, nil
}

func truncate(data []byte, n int) string {
	if len(data) > n {
		return string(data[:n]) + "..."
	}
	return string(data)
}

func printJSON(w io.Writer, v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return 1
	}
	if _, err := w.Write(append(data, '\n')); err != nil {
		return 1
	}
	return 0
}

// printError writes a CNI error as the spec asks: JSON on stdout, and a
// non-zero exit code.
func printError(w io.Writer, e *types.Error) int {
	printJSON(w, e)
	return 1
}
