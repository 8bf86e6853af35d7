package main

import (
	"context"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/volume"
)

// defaultVolumeStatsAggPeriod is the kubelet's --volume-stats-agg-period.
const defaultVolumeStatsAggPeriod = volume.DefaultStatsPeriod

func (o *Options) bindStorageFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.VolumeStatsAggPeriod, "volume-stats-agg-period", o.VolumeStatsAggPeriod, "How long a pod volume's measured usage (/stats/summary, kubelet_volume_stats_*) is served before the volume is measured again; 0 turns volume stats off.")
}

// volumeStatsPeriod is the volume manager's StatsPeriod: the flag's 0
// (off, as the kubelet's) is its negative.
func (o *Options) volumeStatsPeriod() time.Duration {
	if o.VolumeStatsAggPeriod <= 0 {
		return -1
	}
	return o.VolumeStatsAggPeriod
}

// nodeLabels reads the Node's labels from the cache, for the persistent
// volumes' nodeAffinity; nil until the Node is registered.
func nodeLabels(cache client.Reader, nodeName string) func(context.Context) map[string]string {
	return func(ctx context.Context) map[string]string {
		node := &corev1.Node{}
		if err := cache.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return nil
		}
		return node.Labels
	}
}
