// Package network owns the node's pod networking through CNI. In the
// `runtime` mode the container runtime runs CNI itself; nodelet only renders
// the node's conflist from its pod CIDRs when none is installed, and says
// whether one is there.
package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"

	"github.com/nodelet/nodelet/internal/util/atomicfile"
)

// cniVersion is the spec version of the rendered list. The CNI plugins 1.x
// and containerd 1.6 both speak it.
const cniVersion = "1.0.0"

// maxInterfaceName is IFNAMSIZ less its terminating NUL.
const maxInterfaceName = 15

// configExtensions are the file names a runtime loads as CNI configuration.
var configExtensions = []string{".conf", ".conflist", ".json"}

// ConfigOptions describe the node's CNI configuration.
type ConfigOptions struct {
	// ConfDir is the folder the runtime loads CNI configuration from.
	// Default: v1alpha1.DefaultCNIConfDir.
	ConfDir string
	// BinDir holds the CNI plugin binaries, as the runtime is told.
	// Default: v1alpha1.DefaultCNIBinDir.
	BinDir string
	// NetworkName names the network in the conflist and its file
	// (10-<NetworkName>.conflist). Default: v1alpha1.DefaultCNINetworkName.
	NetworkName string
	// Bridge is the Linux bridge the pods are plugged into; at most 15
	// characters. Default: v1alpha1.DefaultCNIBridge.
	Bridge string
	// PodCIDRs are the node's pod subnets, at most one per IP family as the
	// controller-manager assigns them. Nothing is written without one.
	PodCIDRs []string
	// IPAMDataDir is where host-local keeps its allocations. Default: empty,
	// host-local's own (/var/lib/cni/networks).
	IPAMDataDir string
}

func (o ConfigOptions) withDefaults() ConfigOptions {
	if o.ConfDir == "" {
		o.ConfDir = configv1alpha1.DefaultCNIConfDir
	}
	if o.BinDir == "" {
		o.BinDir = configv1alpha1.DefaultCNIBinDir
	}
	if o.NetworkName == "" {
		o.NetworkName = configv1alpha1.DefaultCNINetworkName
	}
	if o.Bridge == "" {
		o.Bridge = configv1alpha1.DefaultCNIBridge
	}
	return o
}

// The plugin configurations below mirror what the bridge, host-local,
// portmap and bandwidth plugins read. They do not embed types.PluginConf:
// its pointer MarshalJSON would be promoted and drop every field but its own.

type conflist struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []any  `json:"plugins"`
}

type bridgePlugin struct {
	Type        string        `json:"type"`
	Bridge      string        `json:"bridge"`
	IsGateway   bool          `json:"isGateway"`
	IPMasq      bool          `json:"ipMasq"`
	HairpinMode bool          `json:"hairpinMode"`
	IPAM        hostLocalIPAM `json:"ipam"`
}

type hostLocalIPAM struct {
	Type    string         `json:"type"`
	Ranges  [][]ipamRange  `json:"ranges"`
	Routes  []*types.Route `json:"routes"`
	DataDir string         `json:"dataDir,omitempty"`
}

type ipamRange struct {
	Subnet types.IPNet `json:"subnet"`
}

type capabilityPlugin struct {
	Type         string          `json:"type"`
	Capabilities map[string]bool `json:"capabilities"`
	SNAT         *bool           `json:"snat,omitempty"`
}

// RenderConflist returns the node's CNI conflist: a bridge with host-local
// addresses from each pod CIDR (one range per family, so dual stack works),
// portmap for hostPort and bandwidth for the traffic-shaping annotations.
// There is no loopback plugin: the runtime brings lo up itself (containerd's
// CRI plugin loads its own loopback network beside the configured one).
func RenderConflist(opts ConfigOptions) ([]byte, error) {
	opts = opts.withDefaults()
	if len(opts.PodCIDRs) == 0 {
		return nil, errors.New("rendering the CNI conflist: no pod CIDR")
	}
	if strings.ContainsAny(opts.NetworkName, `/\`) || opts.NetworkName == "." || opts.NetworkName == ".." {
		return nil, fmt.Errorf("rendering the CNI conflist: network name %q cannot name a file", opts.NetworkName)
	}
	if len(opts.Bridge) > maxInterfaceName {
		return nil, fmt.Errorf("rendering the CNI conflist: bridge name %q is longer than %d characters", opts.Bridge, maxInterfaceName)
	}

	ipam := hostLocalIPAM{Type: "host-local", DataDir: opts.IPAMDataDir}
	families := map[bool]bool{}
	for _, cidr := range opts.PodCIDRs {
		_, subnet, err := net.ParseCIDR(cidr)
		if err != nil {
			return nil, fmt.Errorf("rendering the CNI conflist: pod CIDR %q: %w", cidr, err)
		}
		ipv4 := subnet.IP.To4() != nil
		if families[ipv4] {
			return nil, fmt.Errorf("rendering the CNI conflist: more than one pod CIDR of the family of %q", cidr)
		}
		families[ipv4] = true
		ipam.Ranges = append(ipam.Ranges, []ipamRange{{Subnet: types.IPNet(*subnet)}})
		ipam.Routes = append(ipam.Routes, &types.Route{Dst: defaultRoute(ipv4)})
	}

	snat := true
	list := conflist{
		CNIVersion: cniVersion,
		Name:       opts.NetworkName,
		Plugins: []any{
			bridgePlugin{Type: "bridge", Bridge: opts.Bridge, IsGateway: true, IPMasq: true, HairpinMode: true, IPAM: ipam},
			capabilityPlugin{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}, SNAT: &snat},
			capabilityPlugin{Type: "bandwidth", Capabilities: map[string]bool{"bandwidth": true}},
		},
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering the CNI conflist: %w", err)
	}
	// What libcni cannot read, the runtime cannot either.
	if _, err := libcni.NetworkConfFromBytes(data); err != nil {
		return nil, fmt.Errorf("rendering the CNI conflist: %w", err)
	}
	return append(data, '\n'), nil
}

func defaultRoute(ipv4 bool) net.IPNet {
	if ipv4 {
		return net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
	}
	return net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
}

// EnsureConfig writes the node's conflist into ConfDir when ConfDir holds no
// CNI configuration and the node has a pod CIDR; written says whether it
// did. A configuration already there, whoever wrote it, is left alone. The
// list is checked against the plugins in BinDir first, so a missing plugin
// or an unsupported spec version is an error here rather than a failed
// sandbox later.
func EnsureConfig(ctx context.Context, opts ConfigOptions) (written bool, err error) {
	opts = opts.withDefaults()
	if len(opts.PodCIDRs) == 0 {
		return false, nil
	}
	existing, err := configFiles(opts.ConfDir)
	if err != nil {
		return false, err
	}
	if len(existing) > 0 {
		return false, nil
	}

	data, err := RenderConflist(opts)
	if err != nil {
		return false, err
	}
	if err := validate(ctx, opts.BinDir, data); err != nil {
		return false, err
	}

	if err := os.MkdirAll(opts.ConfDir, 0o755); err != nil {
		return false, fmt.Errorf("creating the CNI configuration folder %s: %w", opts.ConfDir, err)
	}
	path := filepath.Join(opts.ConfDir, "10-"+opts.NetworkName+".conflist")
	if err := writeFileAtomically(path, data); err != nil {
		return false, err
	}
	return true, nil
}

// validate checks that every plugin of the list, and the IPAM plugins they
// delegate to, are in binDir and support the list's spec version.
func validate(ctx context.Context, binDir string, data []byte) error {
	list, err := libcni.NetworkConfFromBytes(data)
	if err != nil {
		return fmt.Errorf("parsing the CNI conflist: %w", err)
	}
	return validateList(ctx, libcni.NewCNIConfig([]string{binDir}, nil), binDir, list)
}

func validateList(ctx context.Context, cni *libcni.CNIConfig, binDir string, list *libcni.NetworkConfigList) error {
	if _, err := cni.ValidateNetworkList(ctx, list); err != nil {
		return fmt.Errorf("validating CNI network %q against the plugins in %s: %w", list.Name, binDir, err)
	}
	// ValidateNetworkList looks at the listed plugins only, not at the IPAM
	// plugins they delegate to.
	for _, plugin := range list.Plugins {
		ipam := plugin.Network.IPAM.Type
		if ipam == "" {
			continue
		}
		info, err := cni.GetVersionInfo(ctx, ipam)
		if err != nil {
			return fmt.Errorf("validating CNI network %q against the plugins in %s: %s: %w", list.Name, binDir, ipam, err)
		}
		if !slices.Contains(info.SupportedVersions(), list.CNIVersion) {
			return fmt.Errorf("validating CNI network %q against the plugins in %s: plugin %s does not support config version %q", list.Name, binDir, ipam, list.CNIVersion)
		}
	}
	return nil
}

// writeFileAtomically writes through a hidden temporary file in the same
// folder (atomicfile): a runtime watching the folder never loads half a
// file, and the temporary name has no extension it would load.
func writeFileAtomically(path string, data []byte) error {
	return writeFileAtomicallyMode(path, data, 0o644)
}

func writeFileAtomicallyMode(path string, data []byte, mode os.FileMode) error {
	return atomicfile.Write(path, data, mode)
}

// configFiles lists the CNI configuration files in dir; a missing dir has
// none.
func configFiles(dir string) ([]string, error) {
	files, err := libcni.ConfFiles(dir, configExtensions)
	if err != nil {
		return nil, fmt.Errorf("reading the CNI configuration folder %s: %w", dir, err)
	}
	return files, nil
}

// Status says whether confDir holds a CNI configuration, with a message for
// the node's log when it does not. The runtime's own NetworkReady condition
// decides the Node's readiness; this only explains it.
func Status(confDir string) (ready bool, message string) {
	files, err := configFiles(confDir)
	switch {
	case err != nil:
		return false, err.Error()
	case len(files) == 0:
		return false, fmt.Sprintf("no CNI configuration file in %s", confDir)
	}
	return true, ""
}
