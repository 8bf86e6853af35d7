package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/network"
	"github.com/nodelet/nodelet/network/cnishim"
)

// setUpNetworkMode prepares the runtime's CNI folders for the network
// mode. In agent mode it installs the shim plugin and its conflist for the
// runtime, points the node's own conflist (config) at nodelet's folder, and
// returns the agent that serves the shim; in runtime mode it removes a shim
// conflist an earlier agent-mode run left, and returns nil.
func setUpNetworkMode(ctx context.Context, opts Options, config *network.ConfigOptions, mgr ctrl.Manager, runtimeService cri.RuntimeService, configuredPodCIDRs []string, onBroken func(network.PodRef)) (*network.Agent, error) {
	log := ctrl.Log.WithName("network")
	if opts.NetworkMode != network.ModeAgent {
		removed, err := network.RemoveShimConfig(opts.CNIConfDir)
		if err != nil {
			return nil, fmt.Errorf("removing the agent mode's CNI configuration: %w", err)
		}
		if removed {
			log.Info("Removed the agent mode's CNI configuration from the runtime's folder", "confDir", opts.CNIConfDir)
		}
		return nil, nil
	}

	stateDir := filepath.Join(opts.RootDir, "cni")
	socket := filepath.Join(stateDir, "agent.sock")
	shimPath := opts.CNIShimPath
	if shimPath == "" {
		self, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding nodelet's own binary, beside which the CNI shim is: %w", err)
		}
		shimPath = filepath.Join(filepath.Dir(self), cnishim.PluginType)
	}
	if err := network.InstallShim(network.ShimOptions{
		BinaryPath:     shimPath,
		RuntimeBinDir:  opts.CNIBinDir,
		RuntimeConfDir: opts.CNIConfDir,
		NetworkName:    opts.CNINetworkName,
		Socket:         socket,
	}); err != nil {
		return nil, fmt.Errorf("installing the CNI shim for the runtime: %w", err)
	}
	agentConfDir := opts.CNIAgentConfDir
	if agentConfDir == "" {
		agentConfDir = filepath.Join(stateDir, "net.d")
	}
	config.ConfDir = agentConfDir
	log.Info("Installed the CNI shim for the runtime", "binDir", opts.CNIBinDir, "confDir", opts.CNIConfDir, "agentConfDir", agentConfDir)

	reader := mgr.GetClient()
	return network.NewAgent(network.AgentOptions{
		ConfDir:  agentConfDir,
		BinDir:   opts.CNIBinDir,
		StateDir: stateDir,
		Socket:   socket,
		PodCIDRs: func() []string {
			if len(configuredPodCIDRs) > 0 {
				return configuredPodCIDRs
			}
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			node := &corev1.Node{}
			if err := reader.Get(ctx, client.ObjectKey{Name: opts.NodeName}, node); err != nil {
				return nil
			}
			if len(node.Spec.PodCIDRs) > 0 {
				return node.Spec.PodCIDRs
			}
			if node.Spec.PodCIDR != "" {
				return []string{node.Spec.PodCIDR}
			}
			return nil
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
		Sandboxes: func(ctx context.Context) (map[string]network.SandboxState, error) {
			sandboxes, err := runtimeService.ListPodSandbox(ctx, nil)
			if err != nil {
				return nil, err
			}
			states := make(map[string]network.SandboxState, len(sandboxes))
			for _, sb := range sandboxes {
				states[sb.Id] = network.SandboxNotReady
				if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					states[sb.Id] = network.SandboxReady
				}
			}
			return states, nil
		},
		OnBroken:    onBroken,
		CheckPeriod: opts.CNICheckPeriod.Duration,
		Log:         log.WithName("agent"),
	})
}
