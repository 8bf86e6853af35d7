package network

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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"k8s.io/utils/clock"
)

func (o AgentOptions) recordDir() string { return filepath.Join(o.StateDir, "attachments") }
func (o AgentOptions) cacheDir() string  { return filepath.Join(o.StateDir, "cache") }
func (o AgentOptions) callDir() string   { return filepath.Join(o.StateDir, "calls") }

// CallLogPath is the log of every plugin executed for a container, one
// line each: time, command, plugin.
func CallLogPath(stateDir, containerID string) string {
	return filepath.Join(stateDir, "calls", containerID+".log")
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
		rec, err := decodeRecord(data)
		if err != nil {
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

// decodeRecord reads a record file; one without a container ID names no
// attachment.
func decodeRecord(data []byte) (attachmentRecord, error) {
	var rec attachmentRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, err
	}
	if rec.ContainerID == "" {
		return rec, errors.New("attachment record without a containerID")
	}
	return rec, nil
}

func (a *Agent) writeRecord(key attachmentKey, rec attachmentRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return writeFileAtomically(a.opts.recordPath(key), data)
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
