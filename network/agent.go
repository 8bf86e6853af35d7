package network

// The `agent` network mode: nodelet runs the node's CNI configuration
// itself, through libcni, on the network namespace the runtime made, as
// the kubelet did with dockershim. The runtime insists on running CNI, so
// its only configuration names nodelet's shim plugin (package cnishim),
// which forwards each call here. The agent's parts: serving the shim
// (agent_server.go), what it records (agent_records.go), its CHECKs
// (agent_checks.go) and its garbage collection (agent_gc.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

// Defaults of AgentOptions.
const (
	defaultGCPeriod = 10 * time.Second
	// pluginTimeout bounds one ADD, CHECK or DEL of the whole list.
	pluginTimeout = 3 * time.Minute
)

// SandboxState is what the runtime says of a sandbox.
type SandboxState int

const (
	SandboxAbsent SandboxState = iota
	SandboxNotReady
	SandboxReady
)

// PodRef names the pod an attachment is for.
type PodRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	UID       string `json:"uid,omitempty"`
}

// AgentOptions configure the Agent.
type AgentOptions struct {
	// ConfDir holds the node's real CNI configuration; the first file in
	// name order is used, as runtimes do. Required.
	ConfDir string
	// BinDir holds the CNI plugins. Required.
	BinDir string
	// StateDir holds the records, libcni's cache and the call logs.
	// Required.
	StateDir string
	// Socket is where the shim reaches nodelet. Required; at most 107
	// bytes.
	Socket string
	// PodCIDRs returns the node's pod subnets, for the ipRanges
	// capability. Default: none.
	PodCIDRs func() []string
	// Pod returns the Pod a sandbox is for, or nil when there is none.
	// Default: no Pod is known (no host ports, no bandwidth).
	Pod func(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// Sandboxes returns every sandbox the runtime holds, by ID. Required
	// for garbage collection and periodic checks.
	Sandboxes func(ctx context.Context) (map[string]SandboxState, error)
	// OnBroken is told of a pod whose network a CHECK found broken, once
	// its IPs are withdrawn, so that its sandbox is recreated.
	OnBroken func(pod PodRef)
	// CheckPeriod is how often every attachment of a ready sandbox is
	// CHECKed. Default: v1alpha1.DefaultCNICheckPeriod.
	CheckPeriod time.Duration
	// GCPeriod is how often attachments of sandboxes gone are deleted.
	// Default: 10s.
	GCPeriod time.Duration
	// Exec runs the plugins. Default: libcni's.
	Exec invoke.Exec
	// Clock is the time source. Default: the real clock.
	Clock clock.WithTicker
	// Log is the agent's logger. Default: discard.
	Log logr.Logger
}

// Agent serves the shim's CNI calls with the node's real configuration.
// It is a manager.Runnable: Start serves the socket and runs the periodic
// checks and garbage collection.
type Agent struct {
	opts AgentOptions
	cni  *libcni.CNIConfig

	mu          sync.Mutex
	attachments map[attachmentKey]*attachment
	busy        map[string]chan struct{}
	loaded      loadedConfig
}

type loadedConfig struct {
	data []byte
	list *libcni.NetworkConfigList
	err  error
	// at is when it was loaded: a configuration that failed validation
	// is validated again after revalidateAfter (a plugin installed since).
	at time.Time
}

const revalidateAfter = 10 * time.Second

// NewAgent returns an agent that knows the attachments its records hold.
func NewAgent(opts AgentOptions) (*Agent, error) {
	if opts.ConfDir == "" || opts.BinDir == "" || opts.StateDir == "" || opts.Socket == "" {
		return nil, errors.New("CNI agent: the configuration, plugin and state folders and the socket are required")
	}
	if len(opts.Socket) > 107 {
		return nil, fmt.Errorf("CNI agent: socket path %s is longer than a unix socket's 107 bytes", opts.Socket)
	}
	if opts.PodCIDRs == nil {
		opts.PodCIDRs = func() []string { return nil }
	}
	if opts.Pod == nil {
		opts.Pod = func(context.Context, string, string) (*corev1.Pod, error) { return nil, nil }
	}
	if opts.OnBroken == nil {
		opts.OnBroken = func(PodRef) {}
	}
	if opts.CheckPeriod <= 0 {
		opts.CheckPeriod = configv1alpha1.DefaultCNICheckPeriod
	}
	if opts.GCPeriod <= 0 {
		opts.GCPeriod = defaultGCPeriod
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	if opts.Exec == nil {
		opts.Exec = &invoke.DefaultExec{RawExec: &invoke.RawExec{Stderr: os.Stderr}, PluginDecoder: version.PluginDecoder{}}
	}
	for _, dir := range []string{opts.recordDir(), opts.cacheDir(), opts.callDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("CNI agent: %w", err)
		}
	}
	exec := &callLogExec{Exec: opts.Exec, dir: opts.callDir(), clock: opts.Clock}
	a := &Agent{
		opts:        opts,
		cni:         libcni.NewCNIConfigWithCacheDir([]string{opts.BinDir}, opts.cacheDir(), exec),
		attachments: map[attachmentKey]*attachment{},
		busy:        map[string]chan struct{}{},
	}
	if err := a.loadRecords(); err != nil {
		return nil, err
	}
	return a, nil
}

// --- the configuration ------------------------------------------------------

// config returns the node's real configuration, parsed and validated. It
// is read again whenever the file changes.
func (a *Agent) config(ctx context.Context) (*libcni.NetworkConfigList, error) {
	files, err := configFiles(a.opts.ConfDir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CNI configuration file in %s", a.opts.ConfDir)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return nil, fmt.Errorf("reading CNI configuration: %w", err)
	}
	a.mu.Lock()
	loaded := a.loaded
	a.mu.Unlock()
	now := a.opts.Clock.Now()
	if loaded.data != nil && bytes.Equal(loaded.data, data) && (loaded.err == nil || now.Sub(loaded.at) < revalidateAfter) {
		return loaded.list, loaded.err
	}
	list, err := parseConfig(data)
	if err == nil {
		err = validateList(ctx, a.cni, a.opts.BinDir, list)
	}
	if err != nil {
		err = fmt.Errorf("CNI configuration %s: %w", files[0], err)
	}
	a.mu.Lock()
	a.loaded = loadedConfig{data: data, list: list, err: err, at: now}
	a.mu.Unlock()
	return list, err
}

// parseConfig reads a conflist, or a single plugin's configuration.
func parseConfig(data []byte) (*libcni.NetworkConfigList, error) {
	var probe struct {
		Plugins json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("parsing: %w", err)
	}
	if probe.Plugins != nil {
		return libcni.NetworkConfFromBytes(data)
	}
	conf, err := libcni.NetworkPluginConfFromBytes(data)
	if err != nil {
		return nil, err
	}
	return libcni.ConfListFromConf(conf)
}

// Status is nil when the node's configuration is there and usable, else
// why not: nodelet's part of the node's NetworkReady condition.
func (a *Agent) Status(ctx context.Context) error {
	_, err := a.config(ctx)
	return err
}

// lock makes one container's calls run one at a time.
func (a *Agent) lock(ctx context.Context, containerID string) (func(), error) {
	for {
		a.mu.Lock()
		wait, taken := a.busy[containerID]
		if !taken {
			done := make(chan struct{})
			a.busy[containerID] = done
			a.mu.Unlock()
			return func() {
				a.mu.Lock()
				delete(a.busy, containerID)
				a.mu.Unlock()
				close(done)
			}, nil
		}
		a.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// tryLock is lock without waiting: ok is false when a call is under way.
func (a *Agent) tryLock(containerID string) (unlock func(), ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, taken := a.busy[containerID]; taken {
		return nil, false
	}
	done := make(chan struct{})
	a.busy[containerID] = done
	return func() {
		a.mu.Lock()
		delete(a.busy, containerID)
		a.mu.Unlock()
		close(done)
	}, true
}

// PodIPs returns the addresses nodelet handed a sandbox, primary first.
// known is false for a sandbox nodelet has no attachment of (one of the
// host's network, or one made before agent mode was on). A sandbox whose
// network is broken is known and has none.
func (a *Agent) PodIPs(sandboxID string) (ips []string, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var found *attachment
	for key, att := range a.attachments {
		if key.containerID != sandboxID {
			continue
		}
		if found == nil || key.ifName == "eth0" {
			found = att
		}
	}
	if found == nil {
		return nil, false
	}
	if found.broken || !found.added {
		return nil, true
	}
	return append([]string(nil), found.ips...), true
}

// NeedLeaderElection is false: every node serves its own pods.
func (a *Agent) NeedLeaderElection() bool { return false }

// Start serves the shim on the socket, then checks every attachment at
// once (the pods of a nodelet that restarted) and every CheckPeriod, and
// deletes the attachments of sandboxes gone every GCPeriod, until ctx ends.
func (a *Agent) Start(ctx context.Context) error {
	listener, err := a.listen()
	if err != nil {
		return err
	}
	server := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- server.Serve(listener) }()
	a.opts.Log.Info("Serving CNI for the runtime", "socket", a.opts.Socket, "confDir", a.opts.ConfDir)

	a.garbageCollect(ctx)
	// Attachments added just before a crash may not have their baseline.
	for _, key := range a.snapshot() {
		a.baseline(ctx, key)
	}
	a.checkAll(ctx)
	checks := a.opts.Clock.NewTicker(a.opts.CheckPeriod)
	defer checks.Stop()
	gcs := a.opts.Clock.NewTicker(a.opts.GCPeriod)
	defer gcs.Stop()
	for {
		select {
		case <-ctx.Done():
			a.shutdown(server)
			return nil
		case err := <-served:
			return fmt.Errorf("CNI agent: serving %s: %w", a.opts.Socket, err)
		case <-checks.C():
			a.checkAll(ctx)
		case <-gcs.C():
			a.garbageCollect(ctx)
		}
	}
}

func (a *Agent) sandboxes(ctx context.Context) (map[string]SandboxState, bool) {
	if a.opts.Sandboxes == nil {
		return nil, false
	}
	sandboxes, err := a.opts.Sandboxes(ctx)
	if err != nil {
		a.opts.Log.Error(err, "Failed to list the runtime's sandboxes")
		return nil, false
	}
	return sandboxes, true
}
