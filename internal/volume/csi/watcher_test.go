package csi

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// Unit tests of plugin registration: the pure plan, and the Watcher with
// in-process gRPC servers on unix sockets (a registration server and a
// CSI node server) and client-go's fake clientset.

func TestPlanRegistrations(t *testing.T) {
	t0 := time.Unix(100, 0)
	a, b, c := socketFile{inode: 1, modTime: t0}, socketFile{inode: 2, modTime: t0}, socketFile{inode: 3, modTime: t0}
	found := map[string]socketFile{"/r/a.sock": a, "/r/b.sock": c}
	registered := map[string]registeredPlugin{"/r/b.sock": {file: b}, "/r/gone.sock": {file: a}}
	register, deregister := planRegistrations(found, registered)
	slices.Sort(register)
	slices.Sort(deregister)
	if diff := cmp.Diff([]string{"/r/a.sock", "/r/b.sock"}, register); diff != "" {
		t.Errorf("register: a new socket and one made again (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/r/b.sock", "/r/gone.sock"}, deregister); diff != "" {
		t.Errorf("deregister: one made again and one gone (-want +got):\n%s", diff)
	}
}

func TestSupportedVersion(t *testing.T) {
	for _, ok := range [][]string{{"1.0.0"}, {"0.3.0", "v1.5.0"}, {"1.9"}} {
		if err := supportedVersion("d", ok); err != nil {
			t.Errorf("versions %v: %v", ok, err)
		}
	}
	for _, bad := range [][]string{nil, {"0.3.0"}, {"2.0.0", "x"}} {
		if err := supportedVersion("d", bad); err == nil {
			t.Errorf("versions %v accepted", bad)
		}
	}
}

type registrationServer struct {
	registerapi.UnimplementedRegistrationServer
	info   *registerapi.PluginInfo
	status chan *registerapi.RegistrationStatus
}

func (r *registrationServer) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return r.info, nil
}

func (r *registrationServer) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.status <- s
	return &registerapi.RegistrationStatusResponse{}, nil
}

type nodeServer struct {
	csipb.UnimplementedNodeServer
}

func (*nodeServer) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	return &csipb.NodeGetInfoResponse{NodeId: "mock-node-1"}, nil
}

func serve(t *testing.T, socket string, register func(*grpc.Server)) *grpc.Server {
	t.Helper()
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer()
	register(server)
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return server
}

func TestWatcherRegistersAndDeregistersACSIPlugin(t *testing.T) {
	dir := t.TempDir()
	registry := filepath.Join(dir, RegistryDirName)
	if err := os.MkdirAll(registry, 0o750); err != nil {
		t.Fatal(err)
	}
	endpoint := filepath.Join(dir, "csi.sock")
	serve(t, endpoint, func(s *grpc.Server) { csipb.RegisterNodeServer(s, &nodeServer{}) })
	reg := &registrationServer{
		info:   &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "mock", Endpoint: endpoint, SupportedVersions: []string{"1.0.0"}},
		status: make(chan *registerapi.RegistrationStatus, 1),
	}
	socket := filepath.Join(registry, "mock-reg.sock")
	server := serve(t, socket, func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, reg) })

	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	w := &Watcher{
		Dir: registry, Drivers: NewDrivers(), NodeInfo: &NodeInfo{Client: client, NodeName: "node-1"},
		Clock: clocktesting.NewFakeClock(time.Unix(0, 0)), Log: logr.Discard(),
		registered: map[string]registeredPlugin{}, failedAt: map[string]time.Time{},
	}
	ctx := context.Background()
	w.scan(ctx)
	if status := <-reg.status; !status.PluginRegistered {
		t.Fatalf("registration status %+v", status)
	}
	if _, err := w.Drivers.NodeClient("mock"); err != nil {
		t.Errorf("driver not registered: %v", err)
	}
	csiNode, err := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil || len(csiNode.Spec.Drivers) != 1 || csiNode.Spec.Drivers[0].NodeID != "mock-node-1" {
		t.Fatalf("CSINode %v, %v: want the driver with its node ID", csiNode, err)
	}

	server.Stop()
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	w.scan(ctx)
	if _, err := w.Drivers.NodeClient("mock"); err == nil {
		t.Error("driver still registered after its socket went")
	}
	csiNode, _ = client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	if len(csiNode.Spec.Drivers) != 0 {
		t.Errorf("CSINode drivers left: %v", csiNode.Spec.Drivers)
	}
}

func TestWatcherRefusesOtherPluginTypes(t *testing.T) {
	registry := t.TempDir()
	reg := &registrationServer{
		info:   &registerapi.PluginInfo{Type: registerapi.DevicePlugin, Name: "gpu", SupportedVersions: []string{"v1beta1"}},
		status: make(chan *registerapi.RegistrationStatus, 1),
	}
	serve(t, filepath.Join(registry, "gpu.sock"), func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, reg) })
	w := &Watcher{
		Dir: registry, Drivers: NewDrivers(), NodeInfo: &NodeInfo{Client: fake.NewClientset(), NodeName: "node-1"},
		Clock: clocktesting.NewFakeClock(time.Unix(0, 0)), Log: logr.Discard(),
		registered: map[string]registeredPlugin{}, failedAt: map[string]time.Time{},
	}
	w.scan(context.Background())
	status := <-reg.status
	if status.PluginRegistered || status.Error == "" {
		t.Errorf("status %+v: want refused with a reason", status)
	}
	if len(w.registered) != 0 {
		t.Errorf("registered %v", w.registered)
	}
}

func TestListSocketsFindsSocketsBelowTheFolderButNotHiddenOnes(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"sub", ".hidden"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"a.sock", "sub/b.sock", ".c.sock", ".hidden/d.sock"} {
		listener, err := net.Listen("unix", filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { listener.Close() })
	}
	if err := os.WriteFile(filepath.Join(dir, "not-a-socket"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	found, err := listSockets(dir)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for path := range found {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	if diff := cmp.Diff([]string{filepath.Join(dir, "a.sock"), filepath.Join(dir, "sub/b.sock")}, paths); diff != "" {
		t.Errorf("sockets (-want +got):\n%s", diff)
	}
}

func TestDriversKeepsANewerRegistrationOfTheSameName(t *testing.T) {
	drivers := NewDrivers()
	first, err := dialDriver("mock", "/run/first.sock")
	if err != nil {
		t.Fatal(err)
	}
	second, err := dialDriver("mock", "unix:///run/second.sock")
	if err != nil {
		t.Fatal(err)
	}
	drivers.add(first)
	drivers.add(second)
	if drivers.remove("mock", "/run/first.sock") {
		t.Error("the old registration's removal removed the new one")
	}
	if _, err := drivers.NodeClient("mock"); err != nil {
		t.Errorf("driver gone: %v", err)
	}
	if !drivers.remove("mock", "unix:///run/second.sock") {
		t.Error("the registration was not removed")
	}
	var notRegistered *NotRegisteredError
	if _, err := drivers.NodeClient("mock"); !errors.As(err, &notRegistered) {
		t.Errorf("error = %v, want NotRegisteredError", err)
	}
}
