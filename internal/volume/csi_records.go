package volume

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The records CSI volumes keep on disk (vol_data.json beside each
// published volume), which teardown and the Node's volumesInUse are
// worked out from after a restart, and the volumes being set up that
// are in use before any record exists.

// removeUnmounted removes the folder dir and what is in it, unless
// something under it is mounted.
func removeUnmounted(dir string) error {
	resolved, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	mounts, err := readMountInfo()
	if err != nil {
		return fmt.Errorf("listing mounts: %w", err)
	}
	if under := mountsUnder(mounts, resolved); len(under) > 0 {
		return fmt.Errorf("%s is still mounted", under[0].MountPoint)
	}
	return os.RemoveAll(dir)
}

// csiRecords reads every CSI record on the node but the one at except.
func (m *Manager) csiRecords(except string) ([]csiRecord, error) {
	paths, err := filepath.Glob(filepath.Join(m.PodsDir(), "*", "volumes", pluginCSI, "*", csiVolumeDataFile))
	if err != nil {
		return nil, err
	}
	var records []csiRecord
	for _, path := range paths {
		if path == except {
			continue
		}
		record, err := readCSIRecord(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		records = append(records, record)
	}
	return records, nil
}

func readCSIRecord(path string) (csiRecord, error) {
	var record csiRecord
	data, err := os.ReadFile(path)
	if err != nil {
		return record, err
	}
	if err := json.Unmarshal(data, &record); err != nil {
		return record, fmt.Errorf("reading %s: %w", path, err)
	}
	return record, nil
}

// writeCSIRecord replaces the record whole (a new file renamed over it),
// so a nodelet killed meanwhile leaves the old one or the new one.
func writeCSIRecord(path string, record csiRecord) error {
	data, err := json.Marshal(record)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// markCSIInUse notes an attachable volume the pod is about to use.
func (m *Manager) markCSIInUse(uid types.UID, name corev1.UniqueVolumeName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.csiInUse == nil {
		m.csiInUse = map[types.UID][]corev1.UniqueVolumeName{}
	}
	if !slices.Contains(m.csiInUse[uid], name) {
		m.csiInUse[uid] = append(m.csiInUse[uid], name)
	}
}

func (m *Manager) forgetCSIInUse(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.csiInUse, uid)
}

// VolumesInUse are the attachable volumes the node's pods use or are about
// to use (the Node's status.volumesInUse): those being set up, and those
// a record holds on disk until they are unstaged. The attach/detach
// controller detaches none of them.
func (m *Manager) VolumesInUse() []corev1.UniqueVolumeName {
	var names []corev1.UniqueVolumeName
	m.mu.Lock()
	for _, inUse := range m.csiInUse {
		names = append(names, inUse...)
	}
	m.mu.Unlock()
	records, err := m.csiRecords("")
	if err != nil {
		m.log.Error(err, "Failed to read CSI volume records")
	}
	for _, record := range records {
		if record.AttachmentID != "" {
			names = append(names, csiUniqueName(record.DriverName, record.VolumeHandle))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
