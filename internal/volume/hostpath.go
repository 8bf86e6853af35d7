package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// OnHost is a path of the host as nodelet sees it when the host's root is
// mounted at hostRoot (a companion node's /host: nodelet runs in a
// container, the runtime on the host); hostRoot "" is nodelet's own root.
func OnHost(hostRoot, path string) string {
	if hostRoot == "" {
		return path
	}
	return filepath.Join(hostRoot, path)
}

// checkHostPath makes sure the host's path is what the hostPath volume's
// type says, creating it for the ...OrCreate types, with the kubelet's
// messages (which name the host's path). It looks under hostRoot (see
// OnHost). An unset type checks nothing: the runtime creates a missing
// folder itself.
func checkHostPath(hostRoot, hostPath string, pathType *corev1.HostPathType) error {
	if pathType == nil || *pathType == corev1.HostPathUnset {
		return nil
	}
	path := OnHost(hostRoot, hostPath)
	info, err := os.Stat(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	mode := fs.FileMode(0)
	if exists {
		mode = info.Mode()
	}

	switch *pathType {
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			return os.MkdirAll(path, 0o755)
		}
		fallthrough
	case corev1.HostPathDirectory:
		if !exists || !mode.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", hostPath)
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			f, err := os.OpenFile(path, os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		fallthrough
	case corev1.HostPathFile:
		if !exists || !mode.IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", hostPath)
		}
	case corev1.HostPathSocket:
		if !exists || mode&fs.ModeSocket == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", hostPath)
		}
	case corev1.HostPathCharDev:
		if !exists || mode&fs.ModeCharDevice == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", hostPath)
		}
	case corev1.HostPathBlockDev:
		if !exists || mode&fs.ModeDevice == 0 || mode&fs.ModeCharDevice != 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", hostPath)
		}
	default:
		return fmt.Errorf("%s is an invalid volume type", *pathType)
	}
	return nil
}
