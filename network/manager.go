package network

import (
	"context"

	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/network/cnishim"
)

// Mode is who runs CNI, as the configuration's networkMode says.
type Mode string

// The network modes; their values are the configuration's.
const (
	// ModeRuntime: the runtime runs CNI with the node's conflist.
	ModeRuntime Mode = configv1alpha1.NetworkModeRuntime
	// ModeAgent: nodelet runs CNI itself, behind the shim plugin.
	ModeAgent Mode = configv1alpha1.NetworkModeAgent
)

// ManagerOptions configure the network Manager.
type ManagerOptions struct {
	// Mode is who runs CNI: ModeRuntime or ModeAgent. Required.
	Mode Mode
	// NodeName is the Node whose pod CIDRs the conflist is for. Required.
	NodeName string
	// Config is the node's CNI configuration: the runtime's folders, the
	// network's name and bridge, the IPAM data folder. In agent mode its
	// ConfDir is the runtime's folder, where the shim's conflist goes; the
	// node's own conflist goes to AgentConfDir.
	Config ConfigOptions
	// PodCIDRs, when set, are the node's pod subnets in place of the Node's
	// spec.podCIDRs. Default: the Node's.
	PodCIDRs []string
	// StateDir holds the agent's socket and records. Required in agent mode.
	StateDir string
	// AgentConfDir is the node's conflist folder in agent mode. Default:
	// StateDir/net.d.
	AgentConfDir string
	// ShimPath is the CNI shim binary to install. Default: nodelet-cni
	// beside nodelet's own binary.
	ShimPath string
	// CheckPeriod is how often the agent checks its attachments.
	CheckPeriod time.Duration
	// Reader reads the Node and the Pods (the manager's cache).
	Reader client.Reader
	// Sandboxes lists the runtime's pod sandboxes (cri.RuntimeService).
	Sandboxes interface {
		ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	}
	// OnBroken is told of a pod whose network the agent found broken.
	OnBroken func(PodRef)
	Clock    clock.WithTicker
	Log      logr.Logger
}

// Manager owns the node's pod networking: the network mode's set-up (the
// shim and its conflist for the runtime in agent mode, their removal in
// runtime mode), the node's own conflist once the node has pod CIDRs, and
// in agent mode the agent that runs CNI behind the shim. It is a
// manager.Runnable.
type Manager struct {
	opts ManagerOptions
	// config is the node's conflist's options.
	config ConfigOptions
	// agent is nil in runtime mode.
	agent *Agent
}

// Conflist upkeep periods: every second until the node's conflist is
// written (pods wait for it), then as the node's status is refreshed.
const (
	configRetryPeriod = time.Second
	configCheckPeriod = 10 * time.Second
)

// NewManager sets the network mode up: in agent mode it installs the shim
// plugin and its conflist for the runtime and builds the agent that serves
// it; in runtime mode it removes a shim conflist an earlier agent-mode run
// left.
func NewManager(opts ManagerOptions) (*Manager, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	m := &Manager{opts: opts, config: opts.Config}
	switch opts.Mode {
	case ModeRuntime:
		removed, err := RemoveShimConfig(opts.Config.ConfDir)
		if err != nil {
			return nil, fmt.Errorf("removing the agent mode's CNI configuration: %w", err)
		}
		if removed {
			opts.Log.Info("Removed the agent mode's CNI configuration from the runtime's folder", "confDir", opts.Config.ConfDir)
		}
		return m, nil
	case ModeAgent:
	default:
		return nil, fmt.Errorf("unknown network mode %q: want %s or %s", opts.Mode, ModeRuntime, ModeAgent)
	}

	socket := filepath.Join(opts.StateDir, "agent.sock")
	shimPath := opts.ShimPath
	if shimPath == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding nodelet's own binary, beside which the CNI shim is: %w", err)
		}
		shimPath = filepath.Join(filepath.Dir(self), cnishim.PluginType)
	}
	if err := InstallShim(ShimOptions{
		BinaryPath:     shimPath,
		RuntimeBinDir:  opts.Config.BinDir,
		RuntimeConfDir: opts.Config.ConfDir,
		NetworkName:    opts.Config.NetworkName,
		Socket:         socket,
	}); err != nil {
		return nil, fmt.Errorf("installing the CNI shim for the runtime: %w", err)
	}
	agentConfDir := opts.AgentConfDir
	if agentConfDir == "" {
		agentConfDir = filepath.Join(opts.StateDir, "net.d")
	}
	m.config.ConfDir = agentConfDir
	opts.Log.Info("Installed the CNI shim for the runtime", "binDir", opts.Config.BinDir, "confDir", opts.Config.ConfDir, "agentConfDir", agentConfDir)

	reader := opts.Reader
	agent, err := NewAgent(AgentOptions{
		ConfDir:  agentConfDir,
		BinDir:   opts.Config.BinDir,
		StateDir: opts.StateDir,
		Socket:   socket,
		PodCIDRs: func() []string {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return m.podCIDRs(ctx)
		},
		Pod: func(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
			if namespace == "" || name == "" {
				return nil, nil
			}
			ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			pod := &corev1.Pod{}
			err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod)
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			return pod, nil
		},
		Sandboxes: func(ctx context.Context) (map[string]SandboxState, error) {
			sandboxes, err := opts.Sandboxes.ListPodSandbox(ctx, nil)
			if err != nil {
				return nil, err
			}
			states := make(map[string]SandboxState, len(sandboxes))
			for _, sb := range sandboxes {
				states[sb.Id] = SandboxNotReady
				if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					states[sb.Id] = SandboxReady
				}
			}
			return states, nil
		},
		OnBroken:    opts.OnBroken,
		CheckPeriod: opts.CheckPeriod,
		Log:         opts.Log.WithName("agent"),
	})
	if err != nil {
		return nil, err
	}
	m.agent = agent
	return m, nil
}

// NeedLeaderElection is false: every node runs its own network.
func (m *Manager) NeedLeaderElection() bool { return false }

// Start keeps the node's conflist written, and in agent mode runs the
// agent, until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	// agentDone stays nil, never ready, in runtime mode and once the agent
	// returned.
	var agentDone chan error
	if m.agent != nil {
		agentDone = make(chan error, 1)
		go func() { agentDone <- m.agent.Start(ctx) }()
	}
	for {
		next := configCheckPeriod
		if !m.ensureConfig(ctx) {
			next = configRetryPeriod
		}
		select {
		case <-ctx.Done():
			if agentDone == nil {
				return nil
			}
			return <-agentDone
		case err := <-agentDone:
			if err != nil {
				return err
			}
			agentDone = nil
		case <-m.opts.Clock.After(next):
		}
	}
}

// ensureConfig writes the node's conflist once the node has pod CIDRs and
// none is there, and reports whether one is there now.
func (m *Manager) ensureConfig(ctx context.Context) bool {
	opts := m.config
	opts.PodCIDRs = m.podCIDRs(ctx)
	written, err := EnsureConfig(ctx, opts)
	switch {
	case err != nil:
		m.opts.Log.Error(err, "Failed to write the node's CNI configuration", "podCIDRs", opts.PodCIDRs)
		return false
	case written:
		m.opts.Log.Info("Wrote the node's CNI configuration", "confDir", opts.ConfDir, "podCIDRs", opts.PodCIDRs)
	}
	return written || len(opts.PodCIDRs) > 0
}

// podCIDRs are the node's pod subnets: the configured ones, else the
// Node's; nil until the Node has them.
func (m *Manager) podCIDRs(ctx context.Context) []string {
	if len(m.opts.PodCIDRs) > 0 {
		return m.opts.PodCIDRs
	}
	node := &corev1.Node{}
	if err := m.opts.Reader.Get(ctx, client.ObjectKey{Name: m.opts.NodeName}, node); err != nil {
		return nil
	}
	return PodCIDRs(nil, node)
}

// PodCIDRs are the node's pod subnets: the configured ones, else the ones
// the controller-manager assigned to the Node.
func PodCIDRs(configured []string, node *corev1.Node) []string {
	switch {
	case len(configured) > 0:
		return configured
	case len(node.Spec.PodCIDRs) > 0:
		return node.Spec.PodCIDRs
	case node.Spec.PodCIDR != "":
		return []string{node.Spec.PodCIDR}
	}
	return nil
}

// Status is nodelet's own part of the node's network readiness: in agent
// mode, nil once the agent's CNI configuration is usable; in runtime mode,
// always nil (the runtime's NetworkReady says it all).
func (m *Manager) Status(ctx context.Context) error {
	if m.agent == nil {
		return nil
	}
	return m.agent.Status(ctx)
}

// SandboxIPs is how the runtime learns a sandbox's IPs in agent mode, where
// the runtime does not know them; nil in runtime mode.
func (m *Manager) SandboxIPs() func(sandboxID string) ([]string, bool) {
	if m.agent == nil {
		return nil
	}
	return m.agent.PodIPs
}
