package main

import (
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/network"
)

// buildNetwork sets up the network mode now, and the node's conflist and,
// in agent mode, the CNI agent once the manager runs. A pod whose network
// the agent finds broken is resynced.
func (n *nodelet) buildNetwork() error {
	opts := n.opts
	podNetwork, err := network.NewManager(network.ManagerOptions{
		Mode:     network.Mode(opts.NetworkMode),
		NodeName: opts.NodeName,
		Config: network.ConfigOptions{
			ConfDir:     opts.CNIConfDir,
			BinDir:      opts.CNIBinDir,
			NetworkName: opts.CNINetworkName,
			Bridge:      opts.CNIBridge,
			IPAMDataDir: filepath.Join(opts.RootDir, "cni", "networks"),
		},
		PodCIDRs:     opts.PodCIDRs(),
		StateDir:     filepath.Join(opts.RootDir, "cni"),
		AgentConfDir: opts.CNIAgentConfDir,
		ShimPath:     opts.CNIShimPath,
		CheckPeriod:  opts.CNICheckPeriod.Duration,
		Reader:       n.mgr.GetClient(),
		Sandboxes:    n.runtimeService,
		OnBroken: func(pod network.PodRef) {
			n.podQueue.Resync(pod.Namespace, pod.Name, types.UID(pod.UID))
		},
		Clock: n.clock,
		Log:   n.log.WithName("network"),
	})
	if err != nil {
		return err
	}
	n.podNetwork = podNetwork
	n.runnables = append(n.runnables, podNetwork)
	return nil
}
