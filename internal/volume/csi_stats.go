package volume

import (
	"context"
	"errors"
	"fmt"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The usage of CSI volumes, as the kubelet's CSI metrics provider gets
// it: the volume's driver is asked, NodeGetVolumeStats with the volume's
// handle and the path it is published at, when its node service has the
// GET_VOLUME_STATS capability; a driver without it reports nothing, and
// nodelet measures nothing in its place (the volume is the driver's, and
// may not even be a file system nodelet can walk). Where the driver also
// has VOLUME_CONDITION, the volume's condition comes with it.

// csiVolumeID names a CSI volume for its driver.
type csiVolumeID struct {
	driver, handle string
}

// errCSIStatsNotSupported is a driver without GET_VOLUME_STATS: no usage,
// and nothing to log.
var errCSIStatsNotSupported = errors.New("the CSI driver does not report volume stats")

// csiStatsCapabilities is what a driver's node capabilities say of its
// volume stats.
type csiStatsCapabilities struct {
	stats, condition bool
}

// csiStatsCapabilitiesOf reads the node service's capabilities.
func csiStatsCapabilitiesOf(caps []*csipb.NodeServiceCapability) csiStatsCapabilities {
	var out csiStatsCapabilities
	for _, c := range caps {
		switch c.GetRpc().GetType() {
		case csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			out.stats = true
		case csipb.NodeServiceCapability_RPC_VOLUME_CONDITION:
			out.condition = true
		}
	}
	return out
}

// csiUsage turns a driver's answer into a measurement at now, as the
// kubelet reads it: the BYTES and INODES usages (a unit not given is
// zeros), and the condition when the driver has VOLUME_CONDITION. An
// answer with neither usage nor condition is an error.
func csiUsage(resp *csipb.NodeGetVolumeStatsResponse, condition bool, now time.Time) (usage, error) {
	if !condition && resp.GetUsage() == nil {
		return usage{}, errors.New("failed to get usage from response. usage is nil")
	}
	u := usage{at: now, walked: true}
	for _, v := range resp.GetUsage() {
		switch v.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			u.fs.capacity, u.fs.available, u.used = nonNegative(v.GetTotal()), nonNegative(v.GetAvailable()), nonNegative(v.GetUsed())
		case csipb.VolumeUsage_INODES:
			u.fs.inodes, u.fs.inodesFree, u.inodesUsed = nonNegative(v.GetTotal()), nonNegative(v.GetAvailable()), nonNegative(v.GetUsed())
		}
	}
	if condition {
		abnormal := resp.GetVolumeCondition().GetAbnormal()
		u.abnormal, u.conditionReason = &abnormal, resp.GetVolumeCondition().GetMessage()
	}
	return u, nil
}

// volumeConditionEvent is the kubelet's warning for a measurement of the
// pod's volume whose driver says it is abnormal: its message, and
// whether there is one to give.
func volumeConditionEvent(volume string, u usage) (string, bool) {
	if u.abnormal == nil || !*u.abnormal {
		return "", false
	}
	return fmt.Sprintf("Volume %s: %s", volume, u.conditionReason), true
}

func nonNegative(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// measureCSI asks the volume's driver for its usage, at now.
func (m *Manager) measureCSI(t statsTarget, now time.Time) (usage, error) {
	client, err := m.csi.NodeClient(t.csi.driver)
	if err != nil {
		return usage{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), csiTimeout)
	defer cancel()
	caps, err := client.NodeGetCapabilities(ctx, &csipb.NodeGetCapabilitiesRequest{})
	if err != nil {
		return usage{}, fmt.Errorf("NodeGetCapabilities of driver %s: %w", t.csi.driver, err)
	}
	supported := csiStatsCapabilitiesOf(caps.GetCapabilities())
	if !supported.stats {
		return usage{}, errCSIStatsNotSupported
	}
	resp, err := client.NodeGetVolumeStats(ctx, &csipb.NodeGetVolumeStatsRequest{VolumeId: t.csi.handle, VolumePath: t.path})
	if err != nil {
		return usage{}, fmt.Errorf("NodeGetVolumeStats of volume %s of driver %s: %w", t.csi.handle, t.csi.driver, err)
	}
	return csiUsage(resp, supported.condition, now)
}

// ClaimVolumesAbnormal is the condition of each PersistentVolumeClaim
// mounted by a pod of the node whose CSI driver reports one, as last
// measured (ClaimVolumeStats measures): true when the driver says the
// volume is abnormal. The kubelet's
// kubelet_volume_stats_health_status_abnormal.
func (m *Manager) ClaimVolumesAbnormal() map[statsapi.PVCReference]bool {
	m.mu.Lock()
	var targets []statsTarget
	for _, pod := range m.statsTargets {
		for _, t := range pod {
			if t.claim != nil {
				targets = append(targets, t)
			}
		}
	}
	m.mu.Unlock()
	out := map[statsapi.PVCReference]bool{}
	m.usage.mu.Lock()
	defer m.usage.mu.Unlock()
	for _, t := range targets {
		if entry := m.usage.entries[t.uid][t.name]; entry != nil && entry.last != nil && entry.last.abnormal != nil {
			out[*t.claim] = out[*t.claim] || *entry.last.abnormal
		}
	}
	return out
}
