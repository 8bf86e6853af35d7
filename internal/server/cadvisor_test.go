package server

// Tests of /metrics/cadvisor's contents, from CRI container stats as plain
// values.

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

type metricsCollector []prometheus.Metric

func (c metricsCollector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }
func (c metricsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c {
		ch <- m
	}
}

func TestCadvisorMetricsHaveCadvisorsNamesAndLabels(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC).UnixNano()
	containers := []*runtimeapi.Container{
		{
			Id: "c-app", CreatedAt: at, Image: &runtimeapi.ImageSpec{Image: "registry/busybox:1"},
			Labels: map[string]string{kubecontainer.LabelPodUID: "uid-web", kubecontainer.LabelPodName: "web", kubecontainer.LabelPodNamespace: "ns", kubecontainer.LabelContainerName: "app"},
		},
		// Not nodelet's: left out.
		{Id: "c-other", CreatedAt: at, Labels: map[string]string{}},
	}
	stats := []*runtimeapi.ContainerStats{{
		Attributes: &runtimeapi.ContainerAttributes{Id: "c-app"},
		Cpu:        &runtimeapi.CpuUsage{Timestamp: at, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 2e9}},
		Memory: &runtimeapi.MemoryUsage{Timestamp: at, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 2000},
			UsageBytes: &runtimeapi.UInt64Value{Value: 2100}},
		WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd"},
			UsedBytes: &runtimeapi.UInt64Value{Value: 4096}},
	}}
	labels := `container="app",id="c-app",image="registry/busybox:1",name="c-app",namespace="ns",pod="web"`
	// Readings carry the time the runtime took them (milliseconds).
	want := `# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",cpu="total",id="c-app",image="registry/busybox:1",name="c-app",namespace="ns",pod="web"} 2 1795309200000
# HELP container_fs_usage_bytes Number of bytes that are consumed by the container on this filesystem.
# TYPE container_fs_usage_bytes gauge
container_fs_usage_bytes{container="app",device="/var/lib/containerd",id="c-app",image="registry/busybox:1",name="c-app",namespace="ns",pod="web"} 4096 1795309200000
# HELP container_memory_usage_bytes Current memory usage in bytes, including all memory regardless of when it was accessed
# TYPE container_memory_usage_bytes gauge
container_memory_usage_bytes{` + labels + `} 2100 1795309200000
# HELP container_memory_working_set_bytes Current working set in bytes.
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{` + labels + `} 2000 1795309200000
# HELP container_start_time_seconds Start time of the container since unix epoch in seconds.
# TYPE container_start_time_seconds gauge
container_start_time_seconds{` + labels + `} 1.7953092e+09
`
	got := metricsCollector(cadvisorMetrics(containers, stats))
	if err := testutil.CollectAndCompare(got, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
