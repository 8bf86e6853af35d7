// Command mockplugin is the CSI node plugin nodelet's end-to-end tests run:
// the csi-test module's driver harness (github.com/kubernetes-csi/csi-test,
// whose gRPC server logs every call as a `gRPCCall: {"Method": ...}` line,
// the call log Kubernetes' own CSI tests read) serving a small identity
// and node service of nodelet's own. The csi-test module's mock driver is
// not in its released versions any more, so the node service is written
// here; it does what a real plugin does on the node:
//
//   - NodeStageVolume bind-mounts the volume's folder (<data-dir>/<volume
//     handle>) on the staging path;
//   - NodePublishVolume bind-mounts the staging path on the target path
//     (read-only when asked), and fails unless the volume is staged; the
//     service account tokens it gets (a CSIDriver's tokenRequests) it
//     checks and logs the audiences of ("Got service account tokens");
//   - NodeUnpublishVolume unmounts the target and removes it;
//   - NodeUnstageVolume unmounts the staging path, and fails while a
//     target published from it is still mounted;
//   - a volume asked for with Block access is a file in the data folder
//     behind a loop device, staged and published as a device (block.go);
//   - NodeGetVolumeStats (GET_VOLUME_STATS, VOLUME_CONDITION) answers
//     from statfs and a count of the files of the published path.
//
// A file named fail-<Method> (fail-NodePublishVolume, ...) in the hooks
// folder makes that call fail with Unavailable while it exists, so a test
// can stop the node agent between two calls.
// It is in a module of its own: the csi-test module needs a newer gRPC
// than nodelet's.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/driver"
	"k8s.io/klog/v2"
)

func main() {
	klog.InitFlags(nil)
	var p plugin
	endpoint := flag.String("endpoint", "", "the unix socket to serve CSI on")
	flag.StringVar(&p.name, "name", "mock.csi.nodelet.dev", "the driver's name")
	flag.StringVar(&p.nodeID, "node-id", "", "the node ID NodeGetInfo answers")
	flag.StringVar(&p.topologyKey, "topology-key", "topology.mock.csi.nodelet.dev/node", "the topology key NodeGetInfo reports, with the node ID as value")
	flag.Int64Var(&p.maxVolumes, "max-volumes-per-node", 16, "NodeGetInfo's max_volumes_per_node")
	flag.StringVar(&p.dataDir, "data-dir", "", "the folder holding each volume's files, by volume handle")
	flag.StringVar(&p.hooksDir, "hooks-dir", "", "the folder whose fail-<Method> files make calls fail")
	flag.Parse()
	if *endpoint == "" || p.nodeID == "" || p.dataDir == "" {
		fmt.Fprintln(os.Stderr, "mockplugin: -endpoint, -node-id and -data-dir are required")
		os.Exit(2)
	}
	p.published = map[string]string{}
	if err := run(*endpoint, &p); err != nil {
		klog.ErrorS(err, "CSI plugin failed")
		os.Exit(1)
	}
}

func run(endpoint string, p *plugin) error {
	if err := os.Remove(endpoint); err != nil && !os.IsNotExist(err) {
		return err
	}
	listener, err := net.Listen("unix", endpoint)
	if err != nil {
		return err
	}
	server := driver.NewCSIDriver(&driver.CSIDriverServers{
		Identity: &identity{plugin: p},
		Node:     &node{plugin: p},
	})
	if err := server.Start(listener); err != nil {
		return err
	}
	klog.InfoS("Serving CSI", "driver", p.name, "endpoint", endpoint)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
	server.Stop()
	return nil
}

type identity struct {
	csi.UnimplementedIdentityServer
	plugin *plugin
}
