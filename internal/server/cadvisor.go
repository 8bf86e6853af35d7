package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// probeMetricsHandler serves /metrics/probes, the probe results and
// durations, as the kubelet serves them apart from its own metrics.
func (s *Server) probeMetricsHandler() http.Handler {
	return gathererHandler(s.cfg.ProbeMetrics)
}

// cadvisorMetricsHandler serves /metrics/cadvisor: the container metrics
// the kubelet's embedded cAdvisor serves, under its names and labels, read
// from the runtime's own stats (CRI ListContainerStats) at each scrape.
func (s *Server) cadvisorMetricsHandler() http.Handler {
	return collectorHandler(&cadvisorCollector{runtime: s.cfg.Runtime})
}

// cadvisorLabels are cAdvisor's labels for a container of a pod: id and
// name are the runtime's container ID (nodelet reads no cgroup paths).
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

var (
	cadvisorCPUUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed in seconds.", append(append([]string{}, cadvisorLabels...), "cpu"), nil)
	cadvisorMemoryWorkingSetDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set in bytes.", cadvisorLabels, nil)
	cadvisorMemoryUsageDesc = prometheus.NewDesc("container_memory_usage_bytes",
		"Current memory usage in bytes, including all memory regardless of when it was accessed", cadvisorLabels, nil)
	cadvisorFsUsageDesc = prometheus.NewDesc("container_fs_usage_bytes",
		"Number of bytes that are consumed by the container on this filesystem.", append(append([]string{}, cadvisorLabels...), "device"), nil)
	cadvisorStartTimeDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds.", cadvisorLabels, nil)
)

// cadvisorCollector reads the runtime's container stats at every scrape.
type cadvisorCollector struct {
	runtime cri.RuntimeService
}

func (c *cadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cadvisorCPUUsageDesc, cadvisorMemoryWorkingSetDesc, cadvisorMemoryUsageDesc, cadvisorFsUsageDesc, cadvisorStartTimeDesc} {
		ch <- d
	}
}

func (c *cadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	containers, stats, err := c.read(ctx)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to read container stats for /metrics/cadvisor")
		ch <- prometheus.NewInvalidMetric(cadvisorCPUUsageDesc, err)
		return
	}
	for _, m := range cadvisorMetrics(containers, stats) {
		ch <- m
	}
}

func (c *cadvisorCollector) read(ctx context.Context) ([]*runtimeapi.Container, []*runtimeapi.ContainerStats, error) {
	containers, err := c.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("listing containers: %w", err)
	}
	stats, err := c.runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing container stats: %w", err)
	}
	return containers, stats, nil
}

// cadvisorMetrics are the cAdvisor metrics of nodelet's running
// containers, each reading stamped with its time as the runtime took it.
func cadvisorMetrics(containers []*runtimeapi.Container, stats []*runtimeapi.ContainerStats) []prometheus.Metric {
	byID := make(map[string]*runtimeapi.ContainerStats, len(stats))
	for _, s := range stats {
		byID[s.GetAttributes().GetId()] = s
	}
	var out []prometheus.Metric
	add := func(desc *prometheus.Desc, kind prometheus.ValueType, ns int64, v float64, labels ...string) {
		m := prometheus.MustNewConstMetric(desc, kind, v, labels...)
		if ns != 0 {
			m = prometheus.NewMetricWithTimestamp(time.Unix(0, ns), m)
		}
		out = append(out, m)
	}
	for _, c := range containers {
		pod, namespace := c.Labels[kubecontainer.LabelPodName], c.Labels[kubecontainer.LabelPodNamespace]
		if c.Labels[kubecontainer.LabelPodUID] == "" {
			// Not one of nodelet's.
			continue
		}
		labels := []string{c.Labels[kubecontainer.LabelContainerName], c.Id, c.GetImage().GetImage(), c.Id, namespace, pod}
		add(cadvisorStartTimeDesc, prometheus.GaugeValue, 0, float64(c.CreatedAt)/float64(time.Second), labels...)
		s := byID[c.Id]
		if s == nil {
			continue
		}
		if cpu := s.GetCpu(); cpu.GetUsageCoreNanoSeconds() != nil {
			add(cadvisorCPUUsageDesc, prometheus.CounterValue, cpu.GetTimestamp(),
				float64(cpu.GetUsageCoreNanoSeconds().GetValue())/float64(time.Second), append(labels, "total")...)
		}
		if mem := s.GetMemory(); mem != nil {
			if mem.GetWorkingSetBytes() != nil {
				add(cadvisorMemoryWorkingSetDesc, prometheus.GaugeValue, mem.GetTimestamp(), float64(mem.GetWorkingSetBytes().GetValue()), labels...)
			}
			if mem.GetUsageBytes() != nil {
				add(cadvisorMemoryUsageDesc, prometheus.GaugeValue, mem.GetTimestamp(), float64(mem.GetUsageBytes().GetValue()), labels...)
			}
		}
		if layer := s.GetWritableLayer(); layer.GetUsedBytes() != nil {
			add(cadvisorFsUsageDesc, prometheus.GaugeValue, layer.GetTimestamp(), float64(layer.GetUsedBytes().GetValue()),
				append(labels, layer.GetFsId().GetMountpoint())...)
		}
	}
	return out
}
