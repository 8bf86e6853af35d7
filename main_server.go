package main

import (
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/server"
	"github.com/nodelet/nodelet/internal/server/logs"
)

// buildServer sets up the node's HTTPS API (package server), the kubelet's
// port 10250, with /configz serving the configuration; and the rotation
// of the running containers' logs it serves.
func (n *nodelet) buildServer() error {
	opts := n.opts
	// Until the Node is registered, the configured IP is the node's.
	nodeIPs := func() []string {
		if ips := n.nodeReporter.NodeIPs(); len(ips) > 0 {
			return ips
		}
		return opts.NodeIPs()
	}
	nodeServer, err := server.New(server.Config{
		Options:      opts.ServerOptions(),
		Client:       n.clientset,
		Pods:         n.mgr.GetCache(),
		Runtime:      n.runtimeService,
		Images:       n.imageService,
		Healthz:      n.plegHealthy,
		Metrics:      ctrlmetrics.Registry,
		ProbeMetrics: kubeletmetrics.ProbeRegistry,
		SLIMetrics:   kubeletmetrics.SLIRegistry,
		Volumes:      n.podVolumes,
		Cgroups:      n.podCgroups,
		Configz:      &opts.NodeletConfiguration,
		NodeIPs:      nodeIPs,
		Clock:        n.clock,
		Log:          ctrl.Log.WithName("server"),
	})
	if err != nil {
		return err
	}
	logMaxSize, err := opts.ContainerLogMaxSizeBytes()
	if err != nil {
		return err
	}
	logRotator := logs.NewRotator(n.runtimeService, logs.RotationOptions{
		MaxSize:  logMaxSize,
		MaxFiles: int(*opts.ContainerLogMaxFiles),
		Interval: opts.ContainerLogMonitorInterval.Duration,
	}, n.clock, n.log.WithName("logs"))
	n.runnables = append(n.runnables, nodeServer, logRotator)
	return nil
}
