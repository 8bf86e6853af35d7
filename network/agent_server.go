package network

// Serving the shim: the CNI calls the runtime made, as the shim forwards
// them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/network/cnishim"
)

// errPluginNotAvailable is the CNI spec's STATUS error for a plugin that
// cannot serve ADDs yet.
const errPluginNotAvailable = 50

// listen opens the shim's socket, in place of one an earlier run left.
func (a *Agent) listen() (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(a.opts.Socket), 0o700); err != nil {
		return nil, fmt.Errorf("CNI agent: %w", err)
	}
	if err := os.Remove(a.opts.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("CNI agent: removing the old socket: %w", err)
	}
	listener, err := net.Listen("unix", a.opts.Socket)
	if err != nil {
		return nil, fmt.Errorf("CNI agent: %w", err)
	}
	return listener, nil
}

// shutdown stops serving the shim once the calls under way have answered,
// or after 30s.
func (a *Agent) shutdown(server *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := server.Shutdown(ctx); err != nil {
		a.opts.Log.Error(err, "Stopped serving CNI before the calls under way ended", "socket", a.opts.Socket)
	}
}

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
		if err != nil {
			return nil, fmt.Errorf("reading the cached result of container %s: %w", req.ContainerID, err)
		}
		if result == nil {
			return nil, fmt.Errorf("reading the cached result of container %s: libcni has none", req.ContainerID)
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
		// A plugin may leave the address out: "<nil>" is no pod IP.
		if ip == nil || ip.Address.IP == nil {
			continue
		}
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
