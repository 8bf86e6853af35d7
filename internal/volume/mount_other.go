//go:build !linux

package volume

import (
	"errors"
	"time"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// Mounting is Linux only; these keep the package building elsewhere.

func isTmpfsMountPoint(string) (bool, error) { return false, errors.ErrUnsupported }

func mountTmpfs(string, int64) error { return errors.ErrUnsupported }

func unmount(string) error { return errors.ErrUnsupported }

func readMountInfo() ([]mountInfo, error) { return nil, errors.ErrUnsupported }

func mayHoldMounts(string) bool { return true }

// MakeRShared is Linux only.
func MakeRShared(string) error { return errors.ErrUnsupported }

// PrepareSubPath is Linux only.
func PrepareSubPath(kubecontainer.SubPath) (string, error) { return "", errors.ErrUnsupported }

func changeOwnership(string, ownership) (bool, error, error) {
	return false, nil, errors.ErrUnsupported
}

func measureUsage(string, usageMethod, time.Time) (usage, error) {
	return usage{}, errors.ErrUnsupported
}

func ensureBindMount(string, string, bool, []string) (bool, bool, error) {
	return false, false, errors.ErrUnsupported
}

func isBlockDevice(string) bool { return false }

func ensureDeviceMount(string, string, string, []string) error { return errors.ErrUnsupported }

func (m *Manager) unmountUnusedLocalDevices() error { return nil }
