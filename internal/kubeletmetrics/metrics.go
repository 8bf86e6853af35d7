// Package kubeletmetrics holds the metrics nodelet shares with the kubelet,
// under the kubelet's names, labels and buckets (pkg/kubelet/metrics and
// pkg/kubelet/prober of the kubelet v1.36), so that the dashboards and
// alerts written for the kubelet read nodelet unchanged. Metrics only
// nodelet has keep the nodelet_ prefix where they are defined.
package kubeletmetrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

const kubeletSubsystem = "kubelet"

// Values of the container_type label, the kubelet's.
const (
	Container          = "container"
	InitContainer      = "init_container"
	EphemeralContainer = "ephemeral_container"
)

// Values of the operation_type label of PodWorkerDuration: the kubelet's
// update types, and "terminated" for a pod that has finished.
const (
	OperationCreate     = "create"
	OperationSync       = "sync"
	OperationKill       = "kill"
	OperationTerminated = "terminated"
)

// podStartupDurationBuckets are the kubelet's buckets for pod start
// latencies: round numbers roughly exponential, up to an hour.
var podStartupDurationBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// The metrics of /metrics, registered on controller-runtime's registry.
var (
	// PodStartSLIDuration is from the Pod's creation to all of its
	// containers started, without the time spent pulling images.
	PodStartSLIDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: kubeletSubsystem,
		Name:      "pod_start_sli_duration_seconds",
		Help:      "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
		Buckets:   podStartupDurationBuckets,
	}, []string{})
	// PodStartDuration is from nodelet first syncing a pod to the pod
	// running.
	PodStartDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: kubeletSubsystem,
		Name:      "pod_start_duration_seconds",
		Help:      "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
		Buckets:   podStartupDurationBuckets,
	})
	// PodWorkerDuration is the time of one sync (reconcile) of a pod.
	PodWorkerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: kubeletSubsystem,
		Name:      "pod_worker_duration_seconds",
		Help:      "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
		Buckets:   prometheus.DefBuckets,
	}, []string{"operation_type"})
	// PLEGRelistDuration is the time of one relist of the runtime.
	PLEGRelistDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: kubeletSubsystem,
		Name:      "pleg_relist_duration_seconds",
		Help:      "Duration in seconds for relisting pods in PLEG.",
		Buckets:   prometheus.DefBuckets,
	})
	// PLEGRelistInterval is the time between the starts of two relists.
	PLEGRelistInterval = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: kubeletSubsystem,
		Name:      "pleg_relist_interval_seconds",
		Help:      "Interval in seconds between relisting in PLEG.",
		Buckets:   prometheus.DefBuckets,
	})
	// PLEGDiscardEvents counts pod lifecycle events dropped because the
	// reconcile queue's channel was full; the periodic resync makes up
	// for them.
	PLEGDiscardEvents = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: kubeletSubsystem,
		Name:      "pleg_discard_events",
		Help:      "The number of discard events in PLEG.",
	})
	// RunningPodCount is the number of pods with a ready sandbox, as the
	// last relist saw them.
	RunningPodCount = prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: kubeletSubsystem,
		Name:      "running_pods",
		Help:      "Number of pods that have a running pod sandbox",
	})
	// RunningContainerCount is the number of containers by state
	// (created, running, exited, unknown), as the last relist saw them.
	RunningContainerCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: kubeletSubsystem,
		Name:      "running_containers",
		Help:      "Number of containers currently running",
	}, []string{"container_state"})
	// StartedContainersTotal counts container starts nodelet attempted.
	StartedContainersTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kubeletSubsystem,
		Name:      "started_containers_total",
		Help:      "Cumulative number of containers started",
	}, []string{"container_type"})
	// StartedContainersErrorsTotal counts the starts that failed, by the
	// reason the container waits with (ErrImagePull,
	// CreateContainerConfigError, RunContainerError, ...).
	StartedContainersErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kubeletSubsystem,
		Name:      "started_containers_errors_total",
		Help:      "Cumulative number of errors when starting containers",
	}, []string{"container_type", "code"})
	// Preemptions counts the pods stopped to admit a critical pod, by the
	// first resource it lacked.
	Preemptions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kubeletSubsystem,
		Name:      "preemptions",
		Help:      "Cumulative number of pod preemptions by preemption resource",
	}, []string{"preemption_signal"})
	// Evictions counts the pods the eviction manager evicted, by the
	// signal of the threshold met (memory.available, nodefs.available,
	// ...) or the local storage limit a pod went over
	// (emptydirfs.limit, ephemeralpodfs.limit, ephemeralcontainerfs.limit).
	Evictions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: kubeletSubsystem,
		Name:      "evictions",
		Help:      "Cumulative number of pod evictions by eviction signal",
	}, []string{"eviction_signal"})
	// StorageOperationDuration is the time of each volume operation
	// (volume_mount: a volume set up for a pod), by plugin and outcome.
	StorageOperationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "storage_operation_duration_seconds",
		Help:    "Storage operation duration",
		Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600},
	}, []string{"volume_plugin", "operation_name", "status", "migrated"})
	// CgroupManagerDuration is the time of making (create), limiting
	// (update) and removing (destroy) the pods' and QoS tiers' cgroups.
	CgroupManagerDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: kubeletSubsystem,
		Name:      "cgroup_manager_duration_seconds",
		Help:      "Duration in seconds for cgroup manager operations. Broken down by method.",
		Buckets:   prometheus.DefBuckets,
	}, []string{"operation_type"})
)

func init() {
	metrics.Registry.MustRegister(PodStartSLIDuration, PodStartDuration, PodWorkerDuration,
		PLEGRelistDuration, PLEGRelistInterval, PLEGDiscardEvents,
		RunningPodCount, RunningContainerCount, StartedContainersTotal, StartedContainersErrorsTotal, Preemptions, Evictions, CgroupManagerDuration, StorageOperationDuration)
}

// ObserveStorageOperation records one volume operation of plugin that
// started at start and ended with err: status success or, as the kubelet
// knows no finer, fail-unknown. nodelet migrates no in-tree volumes.
func ObserveStorageOperation(plugin, operation string, start time.Time, err error) {
	status := "success"
	if err != nil {
		status = "fail-unknown"
	}
	StorageOperationDuration.WithLabelValues(plugin, operation, status, "false").Observe(time.Since(start).Seconds())
}

// ObserveCgroupManagerOperation records one cgroup operation (create,
// update, destroy) that started at start.
func ObserveCgroupManagerOperation(operation string, start time.Time) {
	CgroupManagerDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
}

// Container states as the running_containers metric names them, the
// kubelet's.
const (
	ContainerStateCreated = "created"
	ContainerStateRunning = "running"
	ContainerStateExited  = "exited"
	ContainerStateUnknown = "unknown"
)

// SetRunning records what a relist saw: the pods with a ready sandbox and
// the containers in each state. Every state is set, so a state no
// container is in any more goes back to 0.
func SetRunning(pods int, containersByState map[string]int) {
	RunningPodCount.Set(float64(pods))
	for _, state := range []string{ContainerStateCreated, ContainerStateRunning, ContainerStateExited, ContainerStateUnknown} {
		RunningContainerCount.WithLabelValues(state).Set(float64(containersByState[state]))
	}
}
