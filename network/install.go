package network

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nodelet/nodelet/network/cnishim"
)

// ShimConfigFile is the conflist nodelet installs into the runtime's CNI
// configuration folder in agent mode. Its name sorts before the usual
// 10-*.conflist, since runtimes load the first file in name order.
const ShimConfigFile = "00-nodelet-agent.conflist"

// ShimOptions say where the shim goes.
type ShimOptions struct {
	// BinaryPath is the shim's binary as built (nodelet-cni). Required.
	BinaryPath string
	// RuntimeBinDir and RuntimeConfDir are the runtime's CNI folders.
	// Required.
	RuntimeBinDir  string
	RuntimeConfDir string
	// NetworkName names the shim's network; the runtime caches its result
	// under that name.
	NetworkName string
	// Socket is where the shim reaches nodelet.
	Socket string
}

// RenderShimConfig returns the runtime's conflist in agent mode: the shim
// alone. No capabilities: nodelet reads host ports and bandwidth from the
// Pod itself.
func RenderShimConfig(networkName, socket string) ([]byte, error) {
	if networkName == "" || socket == "" {
		return nil, errors.New("rendering the shim's conflist: no network name or socket")
	}
	list := map[string]any{
		"cniVersion": cniVersion,
		"name":       networkName,
		"plugins":    []any{map[string]any{"type": cnishim.PluginType, "socket": socket}},
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// InstallShim copies the shim's binary into the runtime's CNI bin folder
// and writes the conflist naming it into the runtime's configuration
// folder, each only when it differs from what is there, atomically so that
// the runtime never runs half a binary or loads half a file.
func InstallShim(opts ShimOptions) error {
	binary, err := os.ReadFile(opts.BinaryPath)
	if err != nil {
		return fmt.Errorf("reading the CNI shim %s (built from cmd/nodelet-cni): %w", opts.BinaryPath, err)
	}
	if err := os.MkdirAll(opts.RuntimeBinDir, 0o755); err != nil {
		return fmt.Errorf("creating the CNI bin folder: %w", err)
	}
	target := filepath.Join(opts.RuntimeBinDir, cnishim.PluginType)
	if err := writeIfChanged(target, binary, 0o755); err != nil {
		return err
	}
	conf, err := RenderShimConfig(opts.NetworkName, opts.Socket)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.RuntimeConfDir, 0o755); err != nil {
		return fmt.Errorf("creating the CNI configuration folder: %w", err)
	}
	return writeIfChanged(filepath.Join(opts.RuntimeConfDir, ShimConfigFile), conf, 0o644)
}

// RemoveShimConfig removes the shim's conflist from the runtime's folder,
// as the runtime mode wants, so that the node's own conflist is used
// again. Another file of that name is left alone.
func RemoveShimConfig(runtimeConfDir string) (removed bool, err error) {
	path := filepath.Join(runtimeConfDir, ShimConfigFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !bytes.Contains(data, []byte(`"`+cnishim.PluginType+`"`)) {
		return false, nil
	}
	if err := os.Remove(path); err != nil {
		return false, err
	}
	return true, nil
}

func writeIfChanged(path string, data []byte, mode os.FileMode) error {
	if existing, err := os.ReadFile(path); err == nil && bytes.Equal(existing, data) {
		return nil
	}
	return writeFileAtomicallyMode(path, data, mode)
}
