package kubeletmetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The kubelet's volume metrics: the usage of each PersistentVolumeClaim
// mounted on the node, which PVC usage alerts read
// (kubelet_volume_stats_available_bytes / capacity_bytes). Collected at
// each scrape from the volumes' measurements, which are cached for the
// stats period, as the kubelet's volumeStatsCollector reads its summary.
var (
	volumeStatsLabels = []string{"namespace", "persistentvolumeclaim"}

	volumeStatsCapacityBytes = prometheus.NewDesc(kubeletSubsystem+"_volume_stats_capacity_bytes",
		"Capacity in bytes of the volume", volumeStatsLabels, nil)
	volumeStatsAvailableBytes = prometheus.NewDesc(kubeletSubsystem+"_volume_stats_available_bytes",
		"Number of available bytes in the volume", volumeStatsLabels, nil)
	volumeStatsUsedBytes = prometheus.NewDesc(kubeletSubsystem+"_volume_stats_used_bytes",
		"Number of used bytes in the volume", volumeStatsLabels, nil)
	volumeStatsInodes = prometheus.NewDesc(kubeletSubsystem+"_volume_stats_inodes",
		"Maximum number of inodes in the volume", volumeStatsLabels, nil)
	volumeStatsInodesFree = prometheus.NewDesc(kubeletSubsystem+"_volume_stats_inodes_free",
		"Number of free inodes in the volume", volumeStatsLabels, nil)
	volumeStatsInodesUsed = prometheus.NewDesc(kubeletSubsystem+"_volume_stats_inodes_used",
		"Number of used inodes in the volume", volumeStatsLabels, nil)
	volumeStatsHealthAbnormal = prometheus.NewDesc(kubeletSubsystem+"_volume_stats_health_status_abnormal",
		"Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy",
		volumeStatsLabels, nil)
)

// volumeStatsTimeout bounds one scrape's wait for the volumes' usage.
const volumeStatsTimeout = 30 * time.Second

// VolumeStatsCollector collects the kubelet_volume_stats_* gauges of the
// claims Claims returns (volume stats with a pvcRef), each claim once
// however many of the node's pods mount it.
type VolumeStatsCollector struct {
	Claims func(context.Context) []statsapi.VolumeStats
	// Abnormal, when set, is the health of the claims whose CSI driver
	// reports their condition, read after Claims measured them (true:
	// abnormal); a claim Claims has stats for is reported healthy or
	// not, as the kubelet does, only when it is in there.
	Abnormal func() map[statsapi.PVCReference]bool
}

// Describe sends the gauges' descriptions.
func (c *VolumeStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{volumeStatsCapacityBytes, volumeStatsAvailableBytes, volumeStatsUsedBytes,
		volumeStatsInodes, volumeStatsInodesFree, volumeStatsInodesUsed, volumeStatsHealthAbnormal} {
		ch <- d
	}
}

// Collect sends the gauges of every claim.
func (c *VolumeStatsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), volumeStatsTimeout)
	defer cancel()
	claims := c.Claims(ctx)
	var abnormal map[statsapi.PVCReference]bool
	if c.Abnormal != nil {
		abnormal = c.Abnormal()
	}
	for _, m := range volumeStatsMetrics(claims, abnormal) {
		ch <- m
	}
}

// volumeStatsMetrics turns the claims' volume stats, and the health of
// those in abnormal, into the gauges.
func volumeStatsMetrics(stats []statsapi.VolumeStats, abnormal map[statsapi.PVCReference]bool) []prometheus.Metric {
	var out []prometheus.Metric
	seen := map[statsapi.PVCReference]bool{}
	for _, s := range stats {
		if s.PVCRef == nil || seen[*s.PVCRef] {
			continue
		}
		seen[*s.PVCRef] = true
		add := func(desc *prometheus.Desc, v *uint64) {
			if v != nil {
				out = append(out, prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(*v), s.PVCRef.Namespace, s.PVCRef.Name))
			}
		}
		add(volumeStatsCapacityBytes, s.CapacityBytes)
		add(volumeStatsAvailableBytes, s.AvailableBytes)
		add(volumeStatsUsedBytes, s.UsedBytes)
		add(volumeStatsInodes, s.Inodes)
		add(volumeStatsInodesFree, s.InodesFree)
		add(volumeStatsInodesUsed, s.InodesUsed)
		if bad, ok := abnormal[*s.PVCRef]; ok {
			value := uint64(0)
			if bad {
				value = 1
			}
			add(volumeStatsHealthAbnormal, &value)
		}
	}
	return out
}
