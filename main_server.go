package main

import (
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/internal/server"
)

// newNodeServer builds the node's HTTPS API (package server) from the
// settings: the kubelet's port 10250. /configz serves the configuration.
func newNodeServer(opts *options.NodeletServer, clientset kubernetes.Interface, pods client.Reader, runtimeService cri.RuntimeService,
	imageService cri.ImageManagerService, volumes server.VolumeStats, healthz func() error, reportedIPs func() []string, clk clock.WithTicker) (*server.Server, error) {
	// Until the Node is registered, the configured IP is the node's.
	nodeIPs := func() []string {
		if ips := reportedIPs(); len(ips) > 0 {
			return ips
		}
		return opts.NodeIPs()
	}
	return server.New(server.Config{
		Options:      opts.ServerOptions(),
		Client:       clientset,
		Pods:         pods,
		Runtime:      runtimeService,
		Images:       imageService,
		Healthz:      healthz,
		Metrics:      ctrlmetrics.Registry,
		ProbeMetrics: kubeletmetrics.ProbeRegistry,
		Volumes:      volumes,
		Configz:      &opts.NodeletConfiguration,
		NodeIPs:      nodeIPs,
		Clock:        clk,
		Log:          ctrl.Log.WithName("server"),
	})
}
