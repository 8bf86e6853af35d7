// Package csi is the node's side of the Container Storage Interface
// registration, as the kubelet's: CSI node plugins announce themselves
// through the kubelet's plugin-registration protocol (a socket in
// <root-dir>/plugins_registry, see watcher.go), are kept in Drivers by
// name with a client to their endpoint, and are written into the node's
// CSINode object, its csi.volume.kubernetes.io/nodeid annotation and its
// topology labels (nodeinfo.go). Package volume stages and publishes the
// volumes through the clients Drivers hands out.
package csi

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Driver is a registered CSI node plugin.
type Driver struct {
	Name     string
	Endpoint string
	conn     *grpc.ClientConn
	node     csipb.NodeClient
}

// Node is the client of the driver's node service.
func (d *Driver) Node() csipb.NodeClient { return d.node }

// dialDriver makes the client of a driver's endpoint, a unix socket path
// or a unix:// address. gRPC connects lazily: a driver that is not
// listening yet fails the first call, not the dial.
func dialDriver(name, endpoint string) (*Driver, error) {
	target := endpoint
	if !strings.HasPrefix(target, "unix:") {
		target = "unix://" + endpoint
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dialing CSI driver %q at %s: %w", name, endpoint, err)
	}
	return &Driver{Name: name, Endpoint: endpoint, conn: conn, node: csipb.NewNodeClient(conn)}, nil
}

func (d *Driver) close() { _ = d.conn.Close() }

// Drivers are the registered CSI drivers by name. Safe for concurrent
// use.
type Drivers struct {
	mu      sync.RWMutex
	drivers map[string]*Driver
}

// NewDrivers returns an empty registry.
func NewDrivers() *Drivers { return &Drivers{drivers: map[string]*Driver{}} }

// NotRegisteredError is a driver no plugin registered (yet): after a
// restart nodelet waits for the plugin to register again.
type NotRegisteredError struct{ Driver string }

// Error is the kubelet's words.
func (e *NotRegisteredError) Error() string {
	return fmt.Sprintf("driver name %s not found in the list of registered CSI drivers", e.Driver)
}

// NodeClient is the node service client of the driver named name.
func (d *Drivers) NodeClient(name string) (csipb.NodeClient, error) {
	if d == nil {
		return nil, &NotRegisteredError{Driver: name}
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	driver, ok := d.drivers[name]
	if !ok {
		return nil, &NotRegisteredError{Driver: name}
	}
	return driver.node, nil
}

// add registers driver in place of any of the same name.
func (d *Drivers) add(driver *Driver) {
	d.mu.Lock()
	old := d.drivers[driver.Name]
	d.drivers[driver.Name] = driver
	d.mu.Unlock()
	if old != nil && old != driver {
		old.close()
	}
}

// remove forgets the driver named name if its endpoint is endpoint (a
// newer registration of the same name stays).
func (d *Drivers) remove(name, endpoint string) bool {
	d.mu.Lock()
	driver, ok := d.drivers[name]
	if ok && driver.Endpoint == endpoint {
		delete(d.drivers, name)
	}
	d.mu.Unlock()
	if ok && driver.Endpoint == endpoint {
		driver.close()
		return true
	}
	return false
}

// callTimeout bounds the registration's calls to a plugin, as the
// kubelet's.
const callTimeout = 10 * time.Second

// nodeInfo asks the driver for its node ID, volume limit and topology.
func nodeInfo(ctx context.Context, driver *Driver) (*csipb.NodeGetInfoResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return driver.node.NodeGetInfo(ctx, &csipb.NodeGetInfoRequest{})
}
