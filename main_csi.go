package main

import (
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/internal/volume/csi"
)

// newCSIWatcher registers the CSI node plugins whose sockets appear in
// <root-dir>/plugins_registry into drivers, and writes them into the
// node's CSINode and Node, as the kubelet's plugin watcher does.
func newCSIWatcher(opts *options.NodeletServer, clientset kubernetes.Interface, drivers *csi.Drivers, clk clock.WithTicker, log logr.Logger) *csi.Watcher {
	return &csi.Watcher{
		Dir:      filepath.Join(opts.RootDir, csi.RegistryDirName),
		Drivers:  drivers,
		NodeInfo: &csi.NodeInfo{Client: clientset, NodeName: opts.NodeName},
		Clock:    clk,
		Log:      log.WithName("csi"),
	}
}
