package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Block volumes (a VolumeCapability with Block access), as a real
// plugin for local disks does them: the volume is a file in the data
// folder (<data-dir>/<volume handle>.img, made on first use) behind a loop
// device, attached on NodeStageVolume and bind-mounted on the file
// <staging path>/dev, bind-mounted from there on the publish file, and
// detached on NodeUnstageVolume. The file outlives the loop device, so a
// second pod reads what the first wrote.

// blockVolumeSize is the size of a new block volume's file.
const blockVolumeSize = 16 << 20

// stagedDevice is the file a staged block volume's device is mounted on.
func stagedDevice(staging string) string {
	return filepath.Join(staging, "dev")
}

// stageBlock attaches the volume's file to a loop device (the one it is
// attached to already, after a repeated call) and mounts the device on
// the staging folder's dev file.
func stageBlock(dataDir, handle, staging string) error {
	image := filepath.Join(dataDir, filepath.Base(handle)+".img")
	f, err := os.OpenFile(image, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err == nil && info.Size() == 0 {
		err = f.Truncate(blockVolumeSize)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	device, err := losetup("-j", image)
	if err != nil {
		return err
	}
	if device == "" {
		if device, err = losetup("-f", "--show", image); err != nil {
			return err
		}
	}
	return bindMountFile(device, stagedDevice(staging), false)
}

// publishBlock bind-mounts the staged device on the target file; the
// volume must be staged.
func publishBlock(staging, target string, readOnly bool) error {
	source := stagedDevice(staging)
	if mounted, err := isMountPoint(source); err != nil || !mounted {
		return fmt.Errorf("block volume is not staged at %s", staging)
	}
	return bindMountFile(source, target, readOnly)
}

// unstageBlock unmounts the staged device and detaches its loop device.
// A staging folder without one is not a block volume's: ok is false.
func unstageBlock(staging string) (ok bool, err error) {
	source := stagedDevice(staging)
	var st unix.Stat_t
	if err := unix.Stat(source, &st); err != nil {
		return false, nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return false, nil
	}
	if err := unmount(source); err != nil {
		return true, err
	}
	if err := os.Remove(source); err != nil && !os.IsNotExist(err) {
		return true, err
	}
	if unix.Major(st.Rdev) == 7 {
		_, err = losetup("-d", fmt.Sprintf("/dev/loop%d", unix.Minor(st.Rdev)))
	}
	return true, err
}

// bindMountFile mounts the file (a device node) source on the file
// target, made empty first, unless target is a mount point already.
func bindMountFile(source, target string, readOnly bool) error {
	if mounted, err := isMountPoint(target); err != nil || mounted {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return bindMount(source, target, readOnly)
}

// losetup runs losetup and gives the loop device it names first
// ("/dev/loop3: [..]:.. (file)" or "/dev/loop3"), empty when none.
func losetup(args ...string) (string, error) {
	var out, stderr bytes.Buffer
	cmd := exec.Command("losetup", args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("losetup %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	device, _, _ := strings.Cut(first, ":")
	return strings.TrimSpace(device), nil
}
