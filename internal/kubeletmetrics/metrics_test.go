package kubeletmetrics

// Tests of the metrics' shapes (names, types, labels, buckets) as the
// kubelet v1.36 exposes them, read back from the registries they are
// served from.

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

type shape struct {
	kind    dto.MetricType
	labels  []string
	buckets []float64
}

func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

func checkShapes(t *testing.T, families map[string]*dto.MetricFamily, want map[string]shape) {
	t.Helper()
	for name, w := range want {
		f := families[name]
		if f == nil {
			t.Errorf("%s is not served", name)
			continue
		}
		if f.GetType() != w.kind {
			t.Errorf("%s is a %v, want a %v", name, f.GetType(), w.kind)
		}
		m := f.GetMetric()[0]
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		wantLabels := slices.Sorted(slices.Values(w.labels))
		if !slices.Equal(labels, wantLabels) {
			t.Errorf("%s has labels %v, want %v", name, labels, wantLabels)
		}
		if w.kind == dto.MetricType_HISTOGRAM {
			var bounds []float64
			for _, b := range m.GetHistogram().GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
			}
			if !slices.Equal(bounds, w.buckets) {
				t.Errorf("%s has buckets %v, want %v", name, bounds, w.buckets)
			}
		}
	}
}

func TestMetricsHaveTheKubeletsNamesLabelsAndBuckets(t *testing.T) {
	PodStartSLIDuration.WithLabelValues().Observe(1)
	PodStartDuration.Observe(1)
	PodWorkerDuration.WithLabelValues(OperationSync).Observe(0.1)
	PLEGRelistDuration.Observe(0.01)
	PLEGRelistInterval.Observe(1)
	PLEGDiscardEvents.Add(0)
	SetRunning(2, map[string]int{ContainerStateRunning: 3, ContainerStateExited: 1})
	StartedContainersTotal.WithLabelValues(Container).Inc()
	StartedContainersErrorsTotal.WithLabelValues(InitContainer, "CreateContainerConfigError").Inc()
	ObserveRuntimeOperation("run_podsandbox", time.Now(), errors.New("failed"))
	SetNodeName("node-1")
	Evictions.WithLabelValues("memory.available").Inc()
	ObserveCgroupManagerOperation("create", time.Now())
	ObserveStorageOperation("kubernetes.io/configmap", "volume_mount", time.Now(), nil)
	SetBuildInfo("v1.36.3+nodelet.v0.1.0.7f8550a", "7f8550a-dirty")

	podStart := []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	checkShapes(t, gather(t, metrics.Registry), map[string]shape{
		"kubelet_pod_start_sli_duration_seconds":  {kind: dto.MetricType_HISTOGRAM, buckets: podStart},
		"kubelet_pod_start_duration_seconds":      {kind: dto.MetricType_HISTOGRAM, buckets: podStart},
		"kubelet_pod_worker_duration_seconds":     {kind: dto.MetricType_HISTOGRAM, labels: []string{"operation_type"}, buckets: prometheus.DefBuckets},
		"kubelet_pleg_relist_duration_seconds":    {kind: dto.MetricType_HISTOGRAM, buckets: prometheus.DefBuckets},
		"kubelet_pleg_relist_interval_seconds":    {kind: dto.MetricType_HISTOGRAM, buckets: prometheus.DefBuckets},
		"kubelet_pleg_discard_events":             {kind: dto.MetricType_COUNTER},
		"kubelet_running_pods":                    {kind: dto.MetricType_GAUGE},
		"kubelet_running_containers":              {kind: dto.MetricType_GAUGE, labels: []string{"container_state"}},
		"kubelet_started_containers_total":        {kind: dto.MetricType_COUNTER, labels: []string{"container_type"}},
		"kubelet_started_containers_errors_total": {kind: dto.MetricType_COUNTER, labels: []string{"container_type", "code"}},
		"kubelet_runtime_operations_total":        {kind: dto.MetricType_COUNTER, labels: []string{"operation_type"}},
		"kubelet_runtime_operations_errors_total": {kind: dto.MetricType_COUNTER, labels: []string{"operation_type"}},
		"kubelet_runtime_operations_duration_seconds": {kind: dto.MetricType_HISTOGRAM, labels: []string{"operation_type"},
			buckets: []float64{.005, .0125, .03125, .078125, .1953125, .48828125, 1.220703125, 3.0517578125, 7.62939453125, 19.073486328125, 47.6837158203125, 119.20928955078125, 298.0232238769531, 745.0580596923828}},
		"kubelet_cgroup_manager_duration_seconds": {kind: dto.MetricType_HISTOGRAM, labels: []string{"operation_type"}, buckets: prometheus.DefBuckets},
		"storage_operation_duration_seconds": {kind: dto.MetricType_HISTOGRAM, labels: []string{"volume_plugin", "operation_name", "status", "migrated"},
			buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}},
		"kubelet_evictions":     {kind: dto.MetricType_COUNTER, labels: []string{"eviction_signal"}},
		"kubelet_node_name":     {kind: dto.MetricType_GAUGE, labels: []string{"node"}},
		"kubernetes_build_info": {kind: dto.MetricType_GAUGE, labels: []string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"}},
	})
}

// Every state is set, so one no container is in any more reads 0 rather
// than its last count.
func TestSetRunningResetsStatesNoLongerSeen(t *testing.T) {
	SetRunning(1, map[string]int{ContainerStateRunning: 2, ContainerStateCreated: 1})
	SetRunning(1, map[string]int{ContainerStateRunning: 1})
	families := gather(t, metrics.Registry)
	got := map[string]float64{}
	for _, m := range families["kubelet_running_containers"].GetMetric() {
		got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
	}
	want := map[string]float64{"created": 0, "running": 1, "exited": 0, "unknown": 0}
	for state, v := range want {
		if got[state] != v {
			t.Errorf("kubelet_running_containers{container_state=%q} = %v, want %v", state, got[state], v)
		}
	}
}

func TestProbeMetricsHaveTheKubeletsNamesAndLabels(t *testing.T) {
	ProberResults.WithLabelValues("Readiness", ProbeResultSuccessful, "app", "web", "ns", "uid").Inc()
	ProberDuration.WithLabelValues("Readiness", "app", "web", "ns").Observe(0.01)
	families := gather(t, ProbeRegistry)
	checkShapes(t, families, map[string]shape{
		"prober_probe_total":            {kind: dto.MetricType_COUNTER, labels: []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}},
		"prober_probe_duration_seconds": {kind: dto.MetricType_HISTOGRAM, labels: []string{"probe_type", "container", "pod", "namespace"}, buckets: prometheus.DefBuckets},
	})
	// Not mixed into /metrics.
	if _, ok := gather(t, metrics.Registry)["prober_probe_total"]; ok {
		t.Error("prober_probe_total is served on /metrics too")
	}
}

func TestBuildInfoReadsTheVersionAndTreeState(t *testing.T) {
	SetBuildInfo("v1.36.3+nodelet.v0.1.0.abc1234", "abc1234-dirty")
	m := gather(t, metrics.Registry)["kubernetes_build_info"].GetMetric()
	if len(m) != 1 {
		t.Fatalf("%d kubernetes_build_info series, want 1", len(m))
	}
	got := map[string]string{}
	for _, l := range m[0].GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range map[string]string{"major": "1", "minor": "36", "git_commit": "abc1234", "git_tree_state": "dirty"} {
		if got[k] != v {
			t.Errorf("kubernetes_build_info{%s} = %q, want %q", k, got[k], v)
		}
	}
}
