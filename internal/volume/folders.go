package volume

// The layout of a pod's folder under <RootDir>/pods, the kubelet's.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// PodDir is the pod's own folder (<RootDir>/pods/<uid>).
func (m *Manager) PodDir(uid types.UID) string {
	return filepath.Join(m.PodsDir(), string(uid))
}

// PodsDir is the folder of the pods' folders.
func (m *Manager) PodsDir() string {
	return filepath.Join(m.rootDir, "pods")
}

func (m *Manager) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.PodDir(uid), "volumes", plugin, name)
}

// deviceDir is the link to a block volume's device in the pod's folder
// (<RootDir>/pods/<uid>/volumeDevices/<plugin>/<name>), the runtime's
// host path for the device.
func (m *Manager) deviceDir(uid types.UID, plugin, name string) string {
	return filepath.Join(m.PodDir(uid), "volumeDevices", plugin, name)
}

// ensureDir creates dir with mode, whatever the umask, and the folders
// above it as needed (those private to nodelet).
func ensureDir(dir string, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return err
	}
	if err := os.Mkdir(dir, mode); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return os.Chmod(dir, mode)
}

// checkUID keeps a UID from naming a folder outside <RootDir>/pods: the
// folder is removed recursively.
func checkUID(uid types.UID) error {
	s := string(uid)
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, `/\`) || strings.ContainsRune(s, 0) {
		return fmt.Errorf("invalid pod UID %q", s)
	}
	return nil
}
