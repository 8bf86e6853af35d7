package kubeletmetrics

// Tests of the volume metrics as the kubelet v1.36 exposes them, from
// made-up volume stats.

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

func TestVolumeStatsCollector(t *testing.T) {
	claim := func(name string, used uint64) statsapi.VolumeStats {
		return statsapi.VolumeStats{
			Name:   "data",
			PVCRef: &statsapi.PVCReference{Name: name, Namespace: "shop"},
			FsStats: statsapi.FsStats{CapacityBytes: ptr.To[uint64](1000), AvailableBytes: ptr.To[uint64](1000 - used), UsedBytes: ptr.To(used),
				Inodes: ptr.To[uint64](50), InodesFree: ptr.To[uint64](45), InodesUsed: ptr.To[uint64](5)},
		}
	}
	c := &VolumeStatsCollector{Claims: func(context.Context) []statsapi.VolumeStats {
		return []statsapi.VolumeStats{
			claim("data-web-0", 100),
			claim("data-web-0", 100), // mounted by a second pod: once
			{Name: "scratch", FsStats: statsapi.FsStats{UsedBytes: ptr.To[uint64](7)}}, // no claim: none
			claim("logs", 600),
		}
	}, Abnormal: func() map[statsapi.PVCReference]bool {
		// logs' driver reports no condition: no health gauge; a claim
		// with no stats has none either.
		return map[statsapi.PVCReference]bool{{Name: "data-web-0", Namespace: "shop"}: true, {Name: "gone", Namespace: "shop"}: false}
	}}
	want := `
# HELP kubelet_volume_stats_available_bytes Number of available bytes in the volume
# TYPE kubelet_volume_stats_available_bytes gauge
kubelet_volume_stats_available_bytes{namespace="shop",persistentvolumeclaim="data-web-0"} 900
kubelet_volume_stats_available_bytes{namespace="shop",persistentvolumeclaim="logs"} 400
# HELP kubelet_volume_stats_capacity_bytes Capacity in bytes of the volume
# TYPE kubelet_volume_stats_capacity_bytes gauge
kubelet_volume_stats_capacity_bytes{namespace="shop",persistentvolumeclaim="data-web-0"} 1000
kubelet_volume_stats_capacity_bytes{namespace="shop",persistentvolumeclaim="logs"} 1000
# HELP kubelet_volume_stats_health_status_abnormal Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy
# TYPE kubelet_volume_stats_health_status_abnormal gauge
kubelet_volume_stats_health_status_abnormal{namespace="shop",persistentvolumeclaim="data-web-0"} 1
# HELP kubelet_volume_stats_inodes Maximum number of inodes in the volume
# TYPE kubelet_volume_stats_inodes gauge
kubelet_volume_stats_inodes{namespace="shop",persistentvolumeclaim="data-web-0"} 50
kubelet_volume_stats_inodes{namespace="shop",persistentvolumeclaim="logs"} 50
# HELP kubelet_volume_stats_inodes_free Number of free inodes in the volume
# TYPE kubelet_volume_stats_inodes_free gauge
kubelet_volume_stats_inodes_free{namespace="shop",persistentvolumeclaim="data-web-0"} 45
kubelet_volume_stats_inodes_free{namespace="shop",persistentvolumeclaim="logs"} 45
# HELP kubelet_volume_stats_inodes_used Number of used inodes in the volume
# TYPE kubelet_volume_stats_inodes_used gauge
kubelet_volume_stats_inodes_used{namespace="shop",persistentvolumeclaim="data-web-0"} 5
kubelet_volume_stats_inodes_used{namespace="shop",persistentvolumeclaim="logs"} 5
# HELP kubelet_volume_stats_used_bytes Number of used bytes in the volume
# TYPE kubelet_volume_stats_used_bytes gauge
kubelet_volume_stats_used_bytes{namespace="shop",persistentvolumeclaim="data-web-0"} 100
kubelet_volume_stats_used_bytes{namespace="shop",persistentvolumeclaim="logs"} 600
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
