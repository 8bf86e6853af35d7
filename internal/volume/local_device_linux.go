//go:build linux

package volume

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// isBlockDevice tells whether path (links followed) is a block device.
func isBlockDevice(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode()&os.ModeDevice != 0 && info.Mode()&os.ModeCharDevice == 0
}

// ensureDeviceMount mounts device at dir as fsType, formatting it first
// when it has no file system (see local_device.go). Nothing is done when
// dir is mounted already.
func ensureDeviceMount(device, dir, fsType string, options []string) error {
	if mounted, err := isMountPoint(dir); err == nil && mounted {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	format, err := probeDevice(device)
	if err == nil {
		var doFormat bool
		if doFormat, err = formatDecision(format, device); err == nil && doFormat {
			err = formatDevice(device, dir, fsType, options)
		}
	}
	if err == nil {
		err = mountDevice(device, dir, fsType, options, format.fsType)
	}
	if err != nil {
		_ = os.Remove(dir)
		return fmt.Errorf("local: failed to mount device %s at %s (fstype: %s), error %w", device, dir, fsType, err)
	}
	return nil
}

// probeDevice asks blkid what is on the device, as mount-utils asks it.
func probeDevice(device string) (diskFormat, error) {
	out, err := exec.Command("blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", device).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		// Nothing recognised: an empty device.
		return diskFormat{}, nil
	}
	if err != nil {
		return diskFormat{}, fmt.Errorf("failed to get disk format of disk %s: %w (%s)", device, err, strings.TrimSpace(string(out)))
	}
	return parseBlkid(string(out)), nil
}

func formatDevice(device, dir, fsType string, options []string) error {
	out, err := exec.Command("mkfs."+fsType, mkfsArgs(fsType, device)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("format of disk %q failed: type:(%q) target:(%q) options:(%q) errcode:(%w) output:(%v) ", device, fsType, dir, options, err, string(out))
	}
	return nil
}

// mountDevice mounts with mount(8), which reads any file system's
// options as the kubelet's mounter does. existing is the file system the
// device had before, for mount-utils' message when it is not fsType.
func mountDevice(device, dir, fsType string, options []string, existing string) error {
	args := []string{"-t", fsType}
	if len(options) > 0 {
		args = append(args, "-o", strings.Join(options, ","))
	}
	out, err := exec.Command("mount", append(args, device, dir)...).CombinedOutput()
	if err == nil {
		return nil
	}
	if existing != "" && existing != fsType {
		return fmt.Errorf("failed to mount the volume as %q, it already contains %s. Mount error: %w (%s)", fsType, existing, err, strings.TrimSpace(string(out)))
	}
	return fmt.Errorf("mount failed: %w (%s)", err, strings.TrimSpace(string(out)))
}

// unmountUnusedLocalDevices unmounts the node's mounts of local devices
// no pod of the node has any more (volumeUsers), each under the lock its
// set-ups take. Called after each pod's teardown, so a mount a killed
// nodelet left behind goes at the next one.
func (m *Manager) unmountUnusedLocalDevices() error {
	base := filepath.Join(m.rootDir, localDeviceMountsDir)
	entries, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, m.unmountLocalDeviceIfUnused(e.Name(), filepath.Join(base, e.Name())))
	}
	return errors.Join(errs...)
}

func (m *Manager) unmountLocalDeviceIfUnused(pv, dir string) error {
	unlock := m.csiLocks.lock(localDeviceLock(pv))
	defer unlock()
	users, err := m.volumeUsers(pv)
	if err != nil || len(users) > 0 {
		return err
	}
	if err := unmount(dir); err != nil {
		return err
	}
	m.log.V(2).Info("Unmounted local device", "pv", pv, "path", dir)
	return os.Remove(dir)
}
