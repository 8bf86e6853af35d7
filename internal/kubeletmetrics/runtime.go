package kubeletmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The metrics of every CRI call, by the kubelet's operation_type names
// (run_podsandbox, create_container, pull_image, ...): the kubelet
// mixin's "Operation Rate", "Operation Error Rate" and "Operation
// Duration 99th quantile" panels read them.
var (
	RuntimeOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kubeletSubsystem,
		Name:      "runtime_operations_total",
		Help:      "Cumulative number of runtime operations by operation type.",
	}, []string{"operation_type"})
	RuntimeOperationsDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: kubeletSubsystem,
		Name:      "runtime_operations_duration_seconds",
		Help:      "Duration in seconds of runtime operations. Broken down by operation type.",
		// 5 ms to about 4.6 hours, as the kubelet's: a pull may take long.
		Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
	}, []string{"operation_type"})
	RuntimeOperationsErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kubeletSubsystem,
		Name:      "runtime_operations_errors_total",
		Help:      "Cumulative number of runtime operation errors by operation type.",
	}, []string{"operation_type"})
)

func init() {
	metrics.Registry.MustRegister(RuntimeOperations, RuntimeOperationsDuration, RuntimeOperationsErrors)
}

// ObserveRuntimeOperation records one CRI call that started at start and
// ended with err (nil for a success).
func ObserveRuntimeOperation(operation string, start time.Time, err error) {
	RuntimeOperations.WithLabelValues(operation).Inc()
	RuntimeOperationsDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	if err != nil {
		RuntimeOperationsErrors.WithLabelValues(operation).Inc()
	}
}
