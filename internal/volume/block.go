package volume

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Block volumes (volumeMode Block): a device is not mounted but mapped,
// as the kubelet maps it, into the pod's folder as a link
// (<RootDir>/pods/<uid>/volumeDevices/<plugin>/<pv>) to the device, which
// the runtime is handed as the container's device (CRI Devices) and
// resolves itself. The link is made last and removed first.

// mapBlockDevice links mapPath to the block device at devicePath, its
// links resolved (as the kubelet resolves them), unless mapPath already
// is that link; nothing when mapPath is empty (a mounted volume).
func mapBlockDevice(devicePath, mapPath string) error {
	if mapPath == "" {
		return nil
	}
	resolved, err := filepath.EvalSymlinks(devicePath)
	if err != nil {
		return err
	}
	if err := checkBlockDevice(resolved); err != nil {
		return err
	}
	return replaceLink(resolved, mapPath)
}

// mapLocalDevice maps a local volume's device at path, as the host sees
// it, into mapPath. On a companion the runtime reads the link where it
// sees the host, so the link names the host's path as it is.
func mapLocalDevice(hostRoot, path, mapPath string) error {
	if hostRoot == "" {
		return mapBlockDevice(path, mapPath)
	}
	if err := checkBlockDevice(OnHost(hostRoot, path)); err != nil {
		return err
	}
	return replaceLink(path, mapPath)
}

// checkBlockDevice is why path is not a block device, nil when it is.
func checkBlockDevice(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeDevice == 0 || info.Mode()&fs.ModeCharDevice != 0 {
		return fmt.Errorf("%s is not a block device", path)
	}
	return nil
}

// replaceLink makes link point at target, a new link renamed over the
// old one, so there is never a moment without it.
func replaceLink(target, link string) error {
	if current, err := os.Readlink(link); err == nil && current == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o750); err != nil {
		return err
	}
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}
