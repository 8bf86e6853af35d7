package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/nodelet/nodelet/volume"
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
