package network

// The `agent` network mode: nodelet runs the node's CNI configuration
// itself, through libcni, on the network namespace the runtime made, as
// the kubelet did with dockershim. The runtime insists on running CNI, so
// its only configuration names nodelet's shim plugin (package cnishim),
// which forwards each call here.
//
// What nodelet keeps, all under its state folder so that it survives a
// restart:
//   attachments/  one record per attachment, written before its ADD runs
//                 and removed once its DEL succeeded: what to DEL when the
//                 runtime cannot say (a sandbox removed while nodelet was
//                 down, an ADD cut short by a crash);
//   cache/        libcni's own cache: each ADD's result, which CHECK and
//                 DEL are given and pod IPs are read from;
//   calls/        one log per container of every plugin execution, to
//                 show that no ADD ever ran twice.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/network/cnishim"
)

// Modes of --network-mode.
const (
	// ModeRuntime: the runtime runs CNI with the node's conflist.
	ModeRuntime = "runtime"
	// ModeAgent: nodelet runs CNI itself, behind the shim plugin.
	ModeAgent = "agent"
)

// Defaults of AgentOptions.
const (
	DefaultCheckPeriod = time.Minute
	defaultGCPeriod    = 10 * time.Second
	// staleGrace is how long an attachment whose sandbox the runtime does
	// not list yet, but whose network namespace exists, is left alone: the
	// runtime lists a sandbox only once RunPodSandbox is done, seconds
	// after the ADD.
	staleGrace = 2 * time.Minute
	// callLogRetention is how long a container's plugin call log is kept
	// after its attachment is gone.
	callLogRetention = time.Hour
	// pluginTimeout bounds one ADD, CHECK or DEL of the whole list.
	pluginTimeout = 3 * time.Minute
)

// errPluginNotAvailable is the CNI spec's STATUS error for a plugin that
// cannot serve ADDs yet.
const errPluginNotAvailable = 50

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
	// CHECKed. Default: DefaultCheckPeriod.
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

type attachmentKey struct{ containerID, ifName string }

// attachment is what nodelet knows of one attachment.
type attachment struct {
	record attachmentRecord
	// added is true once the ADD succeeded (libcni cached its result).
	added bool
	// ips are the pod's addresses from the result, primary first.
	ips []string
	// broken is set when a CHECK failed: the IPs are withdrawn so that the
	// sandbox is recreated.
	broken bool
}

// attachmentRecord is the file written before an ADD: all a DEL needs.
type attachmentRecord struct {
	ContainerID    string          `json:"containerID"`
	IfName         string          `json:"ifName"`
	NetNS          string          `json:"netns,omitempty"`
	Args           [][2]string     `json:"args,omitempty"`
	CapabilityArgs map[string]any  `json:"capabilityArgs,omitempty"`
	Pod            PodRef          `json:"pod"`
	Created        time.Time       `json:"created"`
	Config         json.RawMessage `json:"config"`
	// Baselined is set once each plugin was CHECKed on the network just
	// added; Unchecked lists (by index) the plugins whose CHECK failed
	// then. Such a plugin cannot tell a broken network from a sound one
	// (portmap 1.1.1 always looks for IPv6 rules, bandwidth 1.1.1 panics
	// without a limit), so later CHECKs leave it out.
	Baselined bool  `json:"baselined,omitempty"`
	Unchecked []int `json:"unchecked,omitempty"`
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
		opts.CheckPeriod = DefaultCheckPeriod
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

func (o AgentOptions) recordDir() string { return filepath.Join(o.StateDir, "attachments") }
func (o AgentOptions) cacheDir() string  { return filepath.Join(o.StateDir, "cache") }
func (o AgentOptions) callDir() string   { return filepath.Join(o.StateDir, "calls") }

// CallLogPath is the log of every plugin executed for a container, one
// line each: time, command, plugin.
func CallLogPath(stateDir, containerID string) string {
	return filepath.Join(stateDir, "calls", containerID+".log")
}

// loadRecords reads the records left by an earlier run, with the results
// libcni cached for them.
func (a *Agent) loadRecords() error {
	entries, err := os.ReadDir(a.opts.recordDir())
	if err != nil {
		return fmt.Errorf("CNI agent: reading records: %w", err)
	}
	for _, entry := range entries {
		if !strings.HasSuffix(entry.Name(), ".json") {
			continue
		}
		path := filepath.Join(a.opts.recordDir(), entry.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("CNI agent: %w", err)
		}
		var rec attachmentRecord
		if err := json.Unmarshal(data, &rec); err != nil || rec.ContainerID == "" {
			a.opts.Log.Error(err, "Removed an unreadable attachment record", "path", path)
			os.Remove(path)
			continue
		}
		att := &attachment{record: rec}
		if list, err := parseConfig(rec.Config); err == nil {
			if result, err := a.cni.GetNetworkListCachedResult(list, rec.runtimeConf()); err == nil && result != nil {
				att.added = true
				att.ips = resultIPs(result, rec.IfName)
			}
		}
		a.attachments[attachmentKey{rec.ContainerID, rec.IfName}] = att
	}
	return nil
}

func (r attachmentRecord) runtimeConf() *libcni.RuntimeConf {
	return &libcni.RuntimeConf{
		ContainerID:    r.ContainerID,
		NetNS:          r.NetNS,
		IfName:         r.IfName,
		Args:           r.Args,
		CapabilityArgs: r.CapabilityArgs,
	}
}

func (o AgentOptions) recordPath(key attachmentKey) string {
	return filepath.Join(o.recordDir(), key.containerID+"_"+key.ifName+".json")
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

// --- serving the shim ---------------------------------------------------------

// ServeHTTP answers the shim's POST /cni.
func (a *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != cnishim.Path {
		http.Error(w, "POST "+cnishim.Path+" only", http.StatusNotFound)
		return
	}
	var req cnishim.Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := a.Handle(r.Context(), req)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Handle runs one CNI call the shim forwarded. ADD and DEL run to their
// end even if the shim gives up waiting: a plugin list cut short would
// leave what it made unrecorded.
func (a *Agent) Handle(ctx context.Context, req cnishim.Request) cnishim.Response {
	var shimConf cnishim.NetConf
	if err := json.Unmarshal(req.Config, &shimConf); err != nil {
		return errorResponse(types.NewError(types.ErrDecodingFailure, "decoding the shim's configuration", err.Error()))
	}
	log := a.opts.Log.WithValues("command", req.Command, "containerID", req.ContainerID)
	switch req.Command {
	case "ADD", "DEL":
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pluginTimeout)
		defer cancel()
		if req.Command == "ADD" {
			result, err := a.add(ctx, req, shimConf.CNIVersion)
			if err != nil {
				log.Info("Failed to add a pod network", "err", err.Error())
				return errorResponse(err)
			}
			return cnishim.Response{Result: result}
		}
		if err := a.del(ctx, req.ContainerID, req.IfName, req.NetNS); err != nil {
			log.Info("Failed to delete a pod network", "err", err.Error())
			return errorResponse(err)
		}
	case "CHECK":
		unlock, err := a.lock(ctx, req.ContainerID)
		if err != nil {
			return errorResponse(err)
		}
		err = a.check(ctx, attachmentKey{req.ContainerID, req.IfName})
		unlock()
		if err != nil {
			return errorResponse(err)
		}
	case "GC":
		var gc struct {
			Valid []types.GCAttachment `json:"cni.dev/valid-attachments"`
		}
		if err := json.Unmarshal(req.Config, &gc); err != nil {
			return errorResponse(types.NewError(types.ErrDecodingFailure, "decoding the valid attachments", err.Error()))
		}
		valid := map[attachmentKey]bool{}
		for _, v := range gc.Valid {
			valid[attachmentKey{v.ContainerID, v.IfName}] = true
		}
		a.collect(ctx, func(key attachmentKey) SandboxState {
			if valid[key] {
				return SandboxReady
			}
			return SandboxAbsent
		})
	case "STATUS":
		if err := a.Status(ctx); err != nil {
			return errorResponse(types.NewError(errPluginNotAvailable, "nodelet's pod network is not ready", err.Error()))
		}
	default:
		return errorResponse(types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("unknown command %q", req.Command), ""))
	}
	return cnishim.Response{}
}

func errorResponse(err error) cnishim.Response {
	var cniErr *types.Error
	if errors.As(err, &cniErr) {
		return cnishim.Response{Error: cniErr}
	}
	return cnishim.Response{Error: types.NewError(types.ErrInternal, err.Error(), "")}
}

// get returns a copy of what nodelet knows of an attachment.
func (a *Agent) get(key attachmentKey) (attachment, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	att, ok := a.attachments[key]
	if !ok {
		return attachment{}, false
	}
	return *att, true
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

// add attaches a sandbox to the node's network and returns the result in
// the shim's spec version. An attachment already added answers from
// libcni's cache: ADD never runs twice for one sandbox.
func (a *Agent) add(ctx context.Context, req cnishim.Request, resultVersion string) ([]byte, error) {
	if req.ContainerID == "" || req.IfName == "" || req.NetNS == "" {
		return nil, types.NewError(types.ErrInvalidEnvironmentVariables, "ADD needs CNI_CONTAINERID, CNI_IFNAME and CNI_NETNS", "")
	}
	unlock, err := a.lock(ctx, req.ContainerID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	key := attachmentKey{req.ContainerID, req.IfName}
	log := a.opts.Log.WithValues("containerID", req.ContainerID)

	if existing, ok := a.get(key); ok {
		if !existing.added {
			return nil, types.NewError(types.ErrTryAgainLater,
				fmt.Sprintf("an earlier ADD of container %s on %s did not finish; it must be deleted first", req.ContainerID, req.IfName), "")
		}
		list, err := parseConfig(existing.record.Config)
		if err != nil {
			return nil, err
		}
		result, err := a.cni.GetNetworkListCachedResult(list, existing.record.runtimeConf())
		if err != nil || result == nil {
			return nil, fmt.Errorf("reading the cached result of container %s: %v", req.ContainerID, err)
		}
		log.Info("Answered a repeated ADD from the cache")
		return encodeResult(result, resultVersion)
	}

	list, err := a.config(ctx)
	if err != nil {
		return nil, types.NewError(types.ErrTryAgainLater, "nodelet's pod network is not ready", err.Error())
	}
	given := parseArgs(req.Args)
	pod, err := a.opts.Pod(ctx, given[argPodNamespace], given[argPodName])
	if err != nil {
		return nil, types.NewError(types.ErrTryAgainLater, fmt.Sprintf("finding pod %s/%s", given[argPodNamespace], given[argPodName]), err.Error())
	}
	if pod != nil && given[argPodUID] != "" && string(pod.UID) != given[argPodUID] {
		// A Pod recreated under the same name: this sandbox is the old one's.
		pod = nil
	}
	caps, err := PodCapabilities(pod, a.opts.PodCIDRs())
	if err != nil {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, fmt.Sprintf("pod %s/%s", given[argPodNamespace], given[argPodName]), err.Error())
	}
	if !json.Valid(list.Bytes) {
		return nil, types.NewError(types.ErrInvalidNetworkConfig, "the CNI configuration is not JSON", "")
	}
	args := podArgs(req.Args, req.ContainerID, pod)
	rec := attachmentRecord{
		ContainerID:    req.ContainerID,
		IfName:         req.IfName,
		NetNS:          req.NetNS,
		Args:           args,
		CapabilityArgs: caps,
		Pod:            PodRef{Namespace: argValue(args, argPodNamespace), Name: argValue(args, argPodName), UID: argValue(args, argPodUID)},
		Created:        a.opts.Clock.Now(),
		Config:         json.RawMessage(list.Bytes),
	}
	if err := a.writeRecord(key, rec); err != nil {
		return nil, err
	}
	att := &attachment{record: rec}
	a.mu.Lock()
	a.attachments[key] = att
	a.mu.Unlock()

	started := a.opts.Clock.Now()
	result, err := a.cni.AddNetworkList(ctx, list, rec.runtimeConf())
	if err != nil {
		// The runtime DELs a sandbox whose network failed; the record
		// stays until then.
		return nil, err
	}
	ips := resultIPs(result, req.IfName)
	a.mu.Lock()
	att.added, att.ips = true, ips
	a.mu.Unlock()
	log.V(1).Info("Added pod network", "pod", klog.KRef(rec.Pod.Namespace, rec.Pod.Name), "ips", ips, "duration", a.opts.Clock.Since(started))
	// Once this ADD has answered (and released the container's lock).
	go a.baseline(context.WithoutCancel(ctx), key)
	return encodeResult(result, resultVersion)
}

// baseline CHECKs each plugin of a newly added attachment on its own and
// records those whose CHECK fails on the network just made.
func (a *Agent) baseline(ctx context.Context, key attachmentKey) {
	ctx, cancel := context.WithTimeout(ctx, pluginTimeout)
	defer cancel()
	unlock, err := a.lock(ctx, key.containerID)
	if err != nil {
		return
	}
	defer unlock()
	att, ok := a.get(key)
	if !ok || !att.added || att.record.Baselined {
		return
	}
	rec := att.record
	list, err := parseConfig(rec.Config)
	if err != nil {
		return
	}
	rec.Baselined, rec.Unchecked = true, nil
	for i, plugin := range list.Plugins {
		if err := a.checkPlugin(ctx, list, plugin, rec.runtimeConf()); err != nil {
			rec.Unchecked = append(rec.Unchecked, i)
			a.opts.Log.V(1).Info("Left a plugin out of this attachment's CHECKs: its CHECK fails on the network just added",
				"containerID", key.containerID, "plugin", plugin.Network.Type, "err", err.Error())
		}
	}
	if err := a.writeRecord(key, rec); err != nil {
		a.opts.Log.Error(err, "Failed to record which plugins can CHECK an attachment", "containerID", key.containerID)
	}
	a.mu.Lock()
	if att, ok := a.attachments[key]; ok {
		att.record = rec
	}
	a.mu.Unlock()
}

// checkPlugin CHECKs one plugin of the list, with the list's cached result.
func (a *Agent) checkPlugin(ctx context.Context, list *libcni.NetworkConfigList, plugin *libcni.PluginConfig, rt *libcni.RuntimeConf) error {
	one := &libcni.NetworkConfigList{Name: list.Name, CNIVersion: list.CNIVersion, Plugins: []*libcni.PluginConfig{plugin}, Bytes: list.Bytes}
	if err := a.cni.CheckNetworkList(ctx, one, rt); err != nil {
		return fmt.Errorf("plugin %s failed (check): %w", plugin.Network.Type, err)
	}
	return nil
}

func encodeResult(result types.Result, resultVersion string) ([]byte, error) {
	if resultVersion != "" {
		converted, err := result.GetAsVersion(resultVersion)
		if err != nil {
			return nil, types.NewError(types.ErrIncompatibleCNIVersion, fmt.Sprintf("converting the result to version %s", resultVersion), err.Error())
		}
		result = converted
	}
	return json.Marshal(result)
}

// resultIPs are the addresses of the sandbox's interface ifName, in the
// result's order (the configuration's ranges, so the primary family first).
func resultIPs(result types.Result, ifName string) []string {
	res, err := current.NewResultFromResult(result)
	if err != nil {
		return nil
	}
	var ips []string
	for _, ip := range res.IPs {
		if ip.Interface != nil {
			i := *ip.Interface
			if i < 0 || i >= len(res.Interfaces) || res.Interfaces[i].Sandbox == "" || res.Interfaces[i].Name != ifName {
				continue
			}
		}
		ips = append(ips, ip.Address.IP.String())
	}
	return ips
}

// del detaches a sandbox. It is idempotent: an attachment nodelet has no
// record of is already gone, and plugins delete what is already deleted,
// even when the network namespace is gone.
func (a *Agent) del(ctx context.Context, containerID, ifName, netns string) error {
	unlock, err := a.lock(ctx, containerID)
	if err != nil {
		return err
	}
	defer unlock()
	return a.delLocked(ctx, attachmentKey{containerID, ifName}, netns)
}

func (a *Agent) delLocked(ctx context.Context, key attachmentKey, netns string) error {
	att, ok := a.get(key)
	if !ok {
		return nil
	}
	rec := att.record
	list, err := parseConfig(rec.Config)
	if err != nil {
		// Nothing can be deleted with a configuration that cannot be read.
		a.opts.Log.Error(err, "Dropped an attachment record with an unreadable configuration", "containerID", key.containerID)
		return a.forget(key)
	}
	rt := rec.runtimeConf()
	if netns != "" {
		rt.NetNS = netns
	}
	if rt.NetNS != "" {
		if _, err := os.Stat(rt.NetNS); errors.Is(err, os.ErrNotExist) {
			// The namespace is gone and the interface in it: only the
			// host's side is left to clean.
			rt.NetNS = ""
		}
	}
	if err := a.cni.DelNetworkList(ctx, list, rt); err != nil {
		return err
	}
	a.opts.Log.V(1).Info("Deleted pod network", "pod", klog.KRef(rec.Pod.Namespace, rec.Pod.Name), "containerID", key.containerID)
	return a.forget(key)
}

func (a *Agent) forget(key attachmentKey) error {
	if err := os.Remove(a.opts.recordPath(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the record of container %s: %w", key.containerID, err)
	}
	a.mu.Lock()
	delete(a.attachments, key)
	a.mu.Unlock()
	return nil
}

func (a *Agent) writeRecord(key attachmentKey, rec attachmentRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return writeFileAtomically(a.opts.recordPath(key), data)
}

// check runs CHECK on one attachment with the configuration and result it
// was added with.
func (a *Agent) check(ctx context.Context, key attachmentKey) error {
	att, ok := a.get(key)
	if !ok || !att.added {
		return types.NewError(types.ErrUnknownContainer, fmt.Sprintf("nodelet has no attachment of container %s on %s", key.containerID, key.ifName), "")
	}
	list, err := parseConfig(att.record.Config)
	if err != nil {
		return err
	}
	for i, plugin := range list.Plugins {
		if slices.Contains(att.record.Unchecked, i) {
			continue
		}
		if err := a.checkPlugin(ctx, list, plugin, att.record.runtimeConf()); err != nil {
			return err
		}
	}
	return nil
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

// --- periodic work --------------------------------------------------------------

// NeedLeaderElection is false: every node serves its own pods.
func (a *Agent) NeedLeaderElection() bool { return false }

// Start serves the shim on the socket, then checks every attachment at
// once (the pods of a nodelet that restarted) and every CheckPeriod, and
// deletes the attachments of sandboxes gone every GCPeriod, until ctx ends.
func (a *Agent) Start(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(a.opts.Socket), 0o700); err != nil {
		return fmt.Errorf("CNI agent: %w", err)
	}
	if err := os.Remove(a.opts.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("CNI agent: removing the old socket: %w", err)
	}
	listener, err := net.Listen("unix", a.opts.Socket)
	if err != nil {
		return fmt.Errorf("CNI agent: %w", err)
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
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = server.Shutdown(shutdownCtx)
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

// snapshot lists the attachments, in a stable order.
func (a *Agent) snapshot() []attachmentKey {
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := make([]attachmentKey, 0, len(a.attachments))
	for key := range a.attachments {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].containerID != keys[j].containerID {
			return keys[i].containerID < keys[j].containerID
		}
		return keys[i].ifName < keys[j].ifName
	})
	return keys
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

// garbageCollect deletes the attachments of sandboxes the runtime no
// longer runs, and the call logs of containers long gone.
func (a *Agent) garbageCollect(ctx context.Context) {
	sandboxes, ok := a.sandboxes(ctx)
	if !ok {
		return
	}
	a.collect(ctx, func(key attachmentKey) SandboxState { return sandboxes[key.containerID] })
	a.pruneCallLogs()
}

func (a *Agent) collect(ctx context.Context, state func(attachmentKey) SandboxState) {
	now := a.opts.Clock.Now()
	for _, key := range a.snapshot() {
		unlock, ok := a.tryLock(key.containerID)
		if !ok {
			continue // a call is under way
		}
		att, ok := a.get(key)
		if ok && isStale(att.added, netnsExists(att.record.NetNS), state(key), now.Sub(att.record.Created)) {
			if err := a.delLocked(ctx, key, ""); err != nil {
				a.opts.Log.Error(err, "Failed to delete the network of a sandbox gone", "containerID", key.containerID)
			} else {
				a.opts.Log.Info("Deleted the network of a sandbox gone", "pod", klog.KRef(att.record.Pod.Namespace, att.record.Pod.Name), "containerID", key.containerID)
			}
		}
		unlock()
	}
}

func netnsExists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// isStale says whether an attachment no call is working on is to be
// deleted, from what the runtime says of its sandbox.
func isStale(added, netnsExists bool, sandbox SandboxState, age time.Duration) bool {
	switch {
	case sandbox == SandboxReady:
		return false
	case sandbox == SandboxNotReady:
		// A stopped sandbox never runs again; its teardown did not reach
		// nodelet.
		return true
	case !added:
		// An ADD cut short (nodelet died): the runtime failed the sandbox.
		return true
	case !netnsExists:
		// The runtime removes the namespace of a sandbox it removed or
		// failed to create.
		return true
	}
	// Added, and its namespace is there, but not listed: the runtime may
	// still be creating the sandbox.
	return age > staleGrace
}

// checkAll CHECKs the attachment of every ready sandbox; a broken one has
// its IPs withdrawn and its pod told, so that the sandbox is recreated.
func (a *Agent) checkAll(ctx context.Context) {
	sandboxes, ok := a.sandboxes(ctx)
	if !ok {
		return
	}
	for _, key := range a.snapshot() {
		if sandboxes[key.containerID] != SandboxReady {
			continue
		}
		unlock, ok := a.tryLock(key.containerID)
		if !ok {
			continue
		}
		att, ok := a.get(key)
		if !ok || !att.added || att.broken || !att.record.Baselined {
			unlock()
			continue
		}
		checkCtx, cancel := context.WithTimeout(ctx, pluginTimeout)
		err := a.check(checkCtx, key)
		cancel()
		if err != nil && a.stillReady(ctx, key.containerID) {
			a.mu.Lock()
			if att, ok := a.attachments[key]; ok {
				att.broken = true
			}
			a.mu.Unlock()
			a.opts.Log.Info("Found a pod network broken; its sandbox will be recreated",
				"pod", klog.KRef(att.record.Pod.Namespace, att.record.Pod.Name), "containerID", key.containerID, "err", err.Error())
			unlock()
			a.opts.OnBroken(att.record.Pod)
			continue
		}
		unlock()
	}
}

// stillReady tells whether a sandbox is still ready, so that a CHECK that
// failed while the sandbox was being stopped is not taken for a broken
// network.
func (a *Agent) stillReady(ctx context.Context, sandboxID string) bool {
	sandboxes, ok := a.sandboxes(ctx)
	return ok && sandboxes[sandboxID] == SandboxReady
}

// pruneCallLogs removes the call logs of containers that have had no
// attachment for callLogRetention.
func (a *Agent) pruneCallLogs() {
	entries, err := os.ReadDir(a.opts.callDir())
	if err != nil {
		return
	}
	a.mu.Lock()
	live := map[string]bool{}
	for key := range a.attachments {
		live[key.containerID] = true
	}
	a.mu.Unlock()
	now := a.opts.Clock.Now()
	for _, entry := range entries {
		id := strings.TrimSuffix(entry.Name(), ".log")
		info, err := entry.Info()
		if err != nil || live[id] || now.Sub(info.ModTime()) < callLogRetention {
			continue
		}
		os.Remove(filepath.Join(a.opts.callDir(), entry.Name()))
	}
}

// callLogExec logs every plugin it runs for a container, before running
// it, into that container's call log.
type callLogExec struct {
	invoke.Exec
	dir   string
	clock clock.Clock
	mu    sync.Mutex
}

func (e *callLogExec) ExecPlugin(ctx context.Context, pluginPath string, stdinData []byte, environ []string) ([]byte, error) {
	command, containerID := envValue(environ, "CNI_COMMAND"), envValue(environ, "CNI_CONTAINERID")
	if containerID != "" && !strings.ContainsAny(containerID, `/\`) {
		line := fmt.Sprintf("%s %s %s\n", e.clock.Now().UTC().Format(time.RFC3339Nano), command, filepath.Base(pluginPath))
		e.mu.Lock()
		f, err := os.OpenFile(filepath.Join(e.dir, containerID+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			_, err = f.WriteString(line)
			f.Close()
		}
		e.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("logging the %s call of plugin %s: %w", command, filepath.Base(pluginPath), err)
		}
	}
	return e.Exec.ExecPlugin(ctx, pluginPath, stdinData, environ)
}

// envValue finds a variable in an environment; the last one wins, as in
// the plugin's own view.
func envValue(environ []string, key string) string {
	value := ""
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			value = v
		}
	}
	return value
}
