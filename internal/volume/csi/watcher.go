package csi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/util/version"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/clock"
)

// The kubelet's plugin watcher: a plugin puts a socket in the registry
// folder; nodelet dials it, asks GetInfo, registers a CSIPlugin that
// supports CSI 1.x and tells it the outcome with NotifyRegistrationStatus.
// A socket that goes away deregisters its plugin; one that is made again
// (another inode or time) is registered again. The folder is read once a
// second, as the kubelet's reconciler runs; what it finds is compared with
// what is registered by planRegistrations, a pure function.

// RegistryDirName is the folder under the root dir plugins register in.
const RegistryDirName = "plugins_registry"

// scanPeriod is how often the registry folder is read.
const scanPeriod = time.Second

// retryPeriod is how soon a socket whose registration failed is tried
// again.
const retryPeriod = 5 * time.Second

// socketFile identifies one socket file: made again, it is another.
type socketFile struct {
	inode   uint64
	modTime time.Time
}

// registeredPlugin is a socket whose plugin is registered.
type registeredPlugin struct {
	file     socketFile
	driver   string
	endpoint string
}

// planRegistrations compares the sockets found with those registered:
// the sockets to register (new or made again) and those to deregister
// (gone or made again).
func planRegistrations(found map[string]socketFile, registered map[string]registeredPlugin) (register, deregister []string) {
	for path, plugin := range registered {
		if file, ok := found[path]; !ok || file != plugin.file {
			deregister = append(deregister, path)
		}
	}
	for path, file := range found {
		if plugin, ok := registered[path]; !ok || plugin.file != file {
			register = append(register, path)
		}
	}
	return register, deregister
}

// supportedVersion tells whether a plugin supporting versions speaks a
// CSI nodelet speaks (1.x), in the kubelet's words when it does not.
func supportedVersion(driver string, versions []string) error {
	if len(versions) == 0 {
		return fmt.Errorf("RegisterPlugin for CSI driver %q failed. Plugin returned an empty list for supported versions", driver)
	}
	for _, v := range versions {
		parsed, err := version.ParseGeneric(v)
		if err == nil && parsed.Major() == 1 {
			return nil
		}
	}
	return fmt.Errorf("RegisterPlugin for CSI driver %q failed. None of the versions specified %q are supported", driver, versions)
}

// Watcher registers the plugins whose sockets appear in Dir into Drivers
// and NodeInfo. It is a manager.Runnable.
type Watcher struct {
	// Dir is the registry folder (<root-dir>/plugins_registry).
	Dir      string
	Drivers  *Drivers
	NodeInfo *NodeInfo
	Clock    clock.WithTicker
	Log      logr.Logger

	registered map[string]registeredPlugin
	failedAt   map[string]time.Time
}

// NeedLeaderElection is false: every node registers its own plugins.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Start reads the folder every second until ctx ends.
func (w *Watcher) Start(ctx context.Context) error {
	if err := os.MkdirAll(w.Dir, 0o750); err != nil {
		return fmt.Errorf("creating the plugin registry folder: %w", err)
	}
	w.registered = map[string]registeredPlugin{}
	w.failedAt = map[string]time.Time{}
	ticker := w.Clock.NewTicker(scanPeriod)
	defer ticker.Stop()
	for {
		w.scan(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

func (w *Watcher) scan(ctx context.Context) {
	found, err := listSockets(w.Dir)
	if err != nil {
		w.Log.Error(err, "Failed to list plugin sockets", "dir", w.Dir)
		return
	}
	register, deregister := planRegistrations(found, w.registered)
	for _, path := range deregister {
		w.deregister(ctx, path)
	}
	now := w.Clock.Now()
	for _, path := range register {
		if at, failed := w.failedAt[path]; failed && now.Sub(at) < retryPeriod {
			continue
		}
		plugin, err := w.register(ctx, path)
		if err != nil {
			w.failedAt[path] = now
			w.Log.Error(err, "Failed to register plugin", "socket", path)
			continue
		}
		delete(w.failedAt, path)
		plugin.file = found[path]
		w.registered[path] = plugin
	}
}

// listSockets lists the sockets in dir and its sub-folders, as the
// kubelet's watcher does, skipping names that start with a dot.
func listSockets(dir string) (map[string]socketFile, error) {
	found := map[string]socketFile{}
	err := filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if strings.HasPrefix(entry.Name(), ".") && path != dir {
			if entry.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if entry.Type()&fs.ModeSocket == 0 {
			return nil
		}
		info, err := entry.Info()
		if err != nil {
			return nil
		}
		file := socketFile{modTime: info.ModTime()}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			file.inode = st.Ino
		}
		found[path] = file
		return nil
	})
	return found, err
}

// register asks the plugin at socket who it is and registers it; the
// plugin is told the outcome either way.
func (w *Watcher) register(ctx context.Context, socket string) (registeredPlugin, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return registeredPlugin{}, fmt.Errorf("dialing %s: %w", socket, err)
	}
	defer conn.Close()
	client := registerapi.NewRegistrationClient(conn)
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	info, err := client.GetInfo(callCtx, &registerapi.InfoRequest{})
	if err != nil {
		return registeredPlugin{}, fmt.Errorf("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket %s, err: %w", socket, err)
	}
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = socket
	}
	regErr := w.install(ctx, info, socket, endpoint)
	status := &registerapi.RegistrationStatus{PluginRegistered: regErr == nil}
	if regErr != nil {
		status.Error = regErr.Error()
	}
	if _, err := client.NotifyRegistrationStatus(callCtx, status); err != nil {
		w.Log.Error(err, "Failed to tell a plugin its registration status", "socket", socket, "plugin", info.Name)
	}
	if regErr != nil {
		return registeredPlugin{}, regErr
	}
	w.Log.Info("Registered CSI driver", "driver", info.Name, "endpoint", endpoint, "socket", socket)
	return registeredPlugin{driver: info.Name, endpoint: endpoint}, nil
}

// install checks the plugin's info, asks its driver for the node's ID and
// topology, and registers it.
func (w *Watcher) install(ctx context.Context, info *registerapi.PluginInfo, socket, endpoint string) error {
	if info.Type != registerapi.CSIPlugin {
		return fmt.Errorf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", info.Type, socket)
	}
	if info.Name == "" {
		return fmt.Errorf("RegisterPlugin error -- the plugin at socket %s has no name", socket)
	}
	if err := supportedVersion(info.Name, info.SupportedVersions); err != nil {
		return err
	}
	driver, err := dialDriver(info.Name, endpoint)
	if err != nil {
		return err
	}
	nodeInfo, err := nodeInfo(ctx, driver)
	if err != nil {
		driver.close()
		return fmt.Errorf("RegisterPlugin for CSI driver %q failed: NodeGetInfo: %w", info.Name, err)
	}
	w.Drivers.add(driver)
	if err := w.NodeInfo.Install(ctx, info.Name, nodeInfo); err != nil {
		w.Drivers.remove(info.Name, endpoint)
		return fmt.Errorf("RegisterPlugin for CSI driver %q failed: %w", info.Name, err)
	}
	return nil
}

// deregister forgets the plugin of a socket that went away.
func (w *Watcher) deregister(ctx context.Context, socket string) {
	plugin := w.registered[socket]
	delete(w.registered, socket)
	if !w.Drivers.remove(plugin.driver, plugin.endpoint) {
		return
	}
	w.Log.Info("Deregistered CSI driver", "driver", plugin.driver, "socket", socket)
	if err := w.NodeInfo.Uninstall(ctx, plugin.driver); err != nil {
		w.Log.Error(err, "Failed to remove a CSI driver from the node", "driver", plugin.driver)
	}
}
