// Command registrar registers a CSI node plugin with nodelet (or a
// kubelet) through the kubelet's plugin-registration protocol, as the
// node-driver-registrar sidecar does beside a real plugin: it serves
// GetInfo and NotifyRegistrationStatus on <registration-dir>/<driver>-reg.sock
// until it is stopped, then removes the socket, which deregisters the
// plugin. nodelet's end-to-end tests run it beside their CSI plugin; it is
// nodelet's own because the node-driver-registrar module cannot be had
// from the Go module proxy.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

type registration struct {
	registerapi.UnimplementedRegistrationServer
	info *registerapi.PluginInfo
}

func (r *registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	log.Printf("GetInfo: driver %s, endpoint %s", r.info.Name, r.info.Endpoint)
	return r.info, nil
}

func (r *registration) NotifyRegistrationStatus(_ context.Context, status *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	log.Printf("Registration status: registered=%t error=%q", status.PluginRegistered, status.Error)
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	dir := flag.String("registration-dir", "", "the node agent's plugins_registry folder")
	driver := flag.String("driver-name", "", "the CSI driver's name")
	endpoint := flag.String("endpoint", "", "the CSI driver's socket, as the node agent reaches it")
	versions := flag.String("versions", "1.0.0", "the CSI versions the driver supports, comma-separated")
	pluginType := flag.String("type", registerapi.CSIPlugin, "the plugin type GetInfo answers")
	flag.Parse()
	if *dir == "" || *driver == "" || *endpoint == "" {
		fmt.Fprintln(os.Stderr, "registrar: -registration-dir, -driver-name and -endpoint are required")
		os.Exit(2)
	}
	if err := run(*dir, &registerapi.PluginInfo{
		Type:              *pluginType,
		Name:              *driver,
		Endpoint:          *endpoint,
		SupportedVersions: strings.Split(*versions, ","),
	}); err != nil {
		log.Fatal(err)
	}
}

func run(dir string, info *registerapi.PluginInfo) error {
	socket := filepath.Join(dir, info.Name+"-reg.sock")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return err
	}
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	server := grpc.NewServer()
	registerapi.RegisterRegistrationServer(server, &registration{info: info})
	go func() {
		signals := make(chan os.Signal, 1)
		signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
		<-signals
		// The socket goes first: its removal is the deregistration.
		_ = os.Remove(socket)
		server.Stop()
	}()
	log.Printf("Serving plugin registration for %s at %s", info.Name, socket)
	return server.Serve(listener)
}
