package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ListPods returns the pods that have a cgroup in any tier (or right under
// the root, as an older nodelet made them with the cgroupfs driver) in any
// hierarchy, sorted, so that the ones whose removal stopped half way are
// found too.
func (m *Manager) ListPods() ([]types.UID, error) {
	seen := map[types.UID]bool{}
	parents := []string{m.qosCgroup(corev1.PodQOSGuaranteed), m.qosCgroup(corev1.PodQOSBurstable), m.qosCgroup(corev1.PodQOSBestEffort)}
	if m.systemd == nil {
		parents = append(parents, m.root)
	}
	for _, h := range m.hierarchies {
		for _, parent := range parents {
			dir := cgroupDir(h, parent)
			entries, err := os.ReadDir(dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing pod cgroups in %s: %w", dir, err)
			}
			for _, e := range entries {
				if uid, ok := m.podUID(parent, e.Name()); ok && e.IsDir() {
					seen[uid] = true
				}
			}
		}
	}
	uids := make([]types.UID, 0, len(seen))
	for uid := range seen {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	return uids, nil
}

// podUID is the UID of the pod whose cgroup is named name in parent.
func (m *Manager) podUID(parent, name string) (types.UID, bool) {
	if m.systemd != nil {
		return podSliceUID(parent, name)
	}
	uid, ok := strings.CutPrefix(name, podPrefix)
	return types.UID(uid), ok && uid != ""
}
