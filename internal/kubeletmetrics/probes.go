package kubeletmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// ProbeRegistry holds the probe metrics, which the node's API serves on
// /metrics/probes as the kubelet does (not on /metrics).
var ProbeRegistry = prometheus.NewRegistry()

// Values of the result label of ProberResults, the kubelet's.
const (
	ProbeResultSuccessful = "successful"
	ProbeResultFailed     = "failed"
	ProbeResultUnknown    = "unknown"
)

var (
	// ProberResults counts probe results by container and result.
	ProberResults = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "prober",
		Name:      "probe_total",
		Help:      "Cumulative number of a liveness, readiness or startup probe for a container by result.",
	}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"})
	// ProberDuration is the time of the probes that gave a result
	// (successful or unknown, as the kubelet records them).
	ProberDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "prober",
		Name:      "probe_duration_seconds",
		Help:      "Duration in seconds for a probe response.",
		Buckets:   prometheus.DefBuckets,
	}, []string{"probe_type", "container", "pod", "namespace"})
)

func init() {
	ProbeRegistry.MustRegister(ProberResults, ProberDuration)
}
