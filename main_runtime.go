package main

import (
	"context"

	"github.com/nodelet/nodelet/internal/resources/allocation"
	"github.com/nodelet/nodelet/internal/resources/oomwatch"
	"github.com/nodelet/nodelet/internal/volume"
	noderuntime "github.com/nodelet/nodelet/runtime"
	"github.com/nodelet/nodelet/runtime/runtimeclass"
)

// buildRuntime sets up the runtime manager, everything nodelet says to the
// runtime through CRI, with what it draws on: the sandboxes' IPs, the
// RuntimeClasses, the user namespaces, the pods' allocations (read back
// from before a restart), the volumes' sub paths, and the kernel's OOM
// kills.
func (n *nodelet) buildRuntime(ctx context.Context) error {
	opts := n.opts
	allocations, err := allocation.Open(opts.RootDir)
	if err != nil {
		// The node starts over, the running pods allocated what their
		// specs ask.
		n.log.Error(err, "Starting over with no pod allocations: the running pods are allocated what their specs ask")
	}
	n.allocations = allocations
	n.oomKills = oomwatch.New(oomwatch.KernelLog, n.log.WithName("oomwatch"))
	runtimeConfig := noderuntime.Config{
		PodLogDir:       opts.PodLogsDir,
		ContainerLogDir: opts.ContainerLogsDir,
		ResolvConf:      *opts.ResolvConf,
		NodeIP:          opts.NodeIP,
		ClusterDNS:      noderuntime.ClusterDNS{Servers: opts.ClusterDNS, Domain: opts.ClusterDomain},
		NodeName:        opts.NodeName,

		ParallelSandboxStarts: int(opts.ParallelSandboxStarts),
		SandboxIPs:            n.podNetwork.SandboxIPs(),
		RuntimeClasses:        runtimeclass.Resolver{Client: n.clientset},
		UserNamespaces:        n.userNamespaces,
		Resizes:               n.allocations,
		PrepareSubPath:        volume.PrepareSubPathOnHost(opts.HostRoot, opts.RootDir),
		HostPaths:             noderuntime.HostPaths{RuntimeRoot: opts.RuntimeHostRoot, Shared: []string{opts.RootDir}},
		OOMKills:              n.oomKills,
	}
	n.runtimeManager, err = noderuntime.NewManager(ctx, n.runtimeService, n.imageService, runtimeConfig, n.recorder, n.clock, n.log.WithName("runtime"))
	if err != nil {
		return err
	}
	n.runtimeManager.CheckResolvConfLimits()
	n.runnables = append(n.runnables, n.oomKills)
	return nil
}
