package server

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// metricsHandler serves nodelet's own metrics (pod start latency, PLEG,
// controller-runtime's), as the kubelet serves its own on /metrics.
func (s *Server) metricsHandler() http.Handler {
	return gathererHandler(s.cfg.Metrics)
}

// gathererHandler serves the metrics of g in Prometheus' format, a metric
// that fails to gather left out rather than the whole answer; nil serves
// 404.
func gathererHandler(g prometheus.Gatherer) http.Handler {
	if g == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// collectorHandler serves what c collects at each scrape.
func collectorHandler(c prometheus.Collector) http.Handler {
	registry := prometheus.NewRegistry()
	registry.MustRegister(c)
	return gathererHandler(registry)
}

// resourceMetricsHandler serves /metrics/resource, what metrics-server
// scrapes for `kubectl top`: the CPU and memory of the node, its pods and
// their containers, under the kubelet's metric names.
func (s *Server) resourceMetricsHandler() http.Handler {
	return collectorHandler(&resourceCollector{stats: s.stats})
}

var (
	nodeCPUUsageDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryUsageDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"Current working set of the node in bytes", nil, nil)
	containerCPUUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemoryUsageDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerStartTimeDesc = prometheus.NewDesc("container_start_time_seconds",
		"Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
	podCPUUsageDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemoryUsageDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
)

// resourceCollector reads a stats summary at every scrape.
type resourceCollector struct {
	stats *statsProvider
}

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeCPUUsageDesc, nodeMemoryUsageDesc, containerCPUUsageDesc,
		containerMemoryUsageDesc, containerStartTimeDesc, podCPUUsageDesc, podMemoryUsageDesc, scrapeErrorDesc, resourceScrapeErrorDesc} {
		ch <- d
	}
}

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	summary, err := c.stats.summary(ctx)
	failed := 0.0
	if err != nil {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, failed)
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, failed)
	if err != nil {
		return
	}
	for _, m := range resourceMetrics(summary) {
		ch <- m
	}
}

// resourceMetrics turns a summary into the resource metrics, each stamped
// with the time of its reading.
func resourceMetrics(summary *statsapi.Summary) []prometheus.Metric {
	var out []prometheus.Metric
	add := func(desc *prometheus.Desc, kind prometheus.ValueType, at time.Time, v float64, labels ...string) {
		out = append(out, prometheus.NewMetricWithTimestamp(at, prometheus.MustNewConstMetric(desc, kind, v, labels...)))
	}
	if cpu := summary.Node.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
		add(nodeCPUUsageDesc, prometheus.CounterValue, cpu.Time.Time, float64(*cpu.UsageCoreNanoSeconds)/float64(time.Second))
	}
	if mem := summary.Node.Memory; mem != nil && mem.WorkingSetBytes != nil {
		add(nodeMemoryUsageDesc, prometheus.GaugeValue, mem.Time.Time, float64(*mem.WorkingSetBytes))
	}
	for _, pod := range summary.Pods {
		name, ns := pod.PodRef.Name, pod.PodRef.Namespace
		if cpu := pod.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
			add(podCPUUsageDesc, prometheus.CounterValue, cpu.Time.Time, float64(*cpu.UsageCoreNanoSeconds)/float64(time.Second), name, ns)
		}
		if mem := pod.Memory; mem != nil && mem.WorkingSetBytes != nil {
			add(podMemoryUsageDesc, prometheus.GaugeValue, mem.Time.Time, float64(*mem.WorkingSetBytes), name, ns)
		}
		for _, c := range pod.Containers {
			out = append(out, prometheus.MustNewConstMetric(containerStartTimeDesc, prometheus.GaugeValue,
				float64(c.StartTime.UnixNano())/float64(time.Second), c.Name, name, ns))
			if cpu := c.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
				add(containerCPUUsageDesc, prometheus.CounterValue, cpu.Time.Time, float64(*cpu.UsageCoreNanoSeconds)/float64(time.Second), c.Name, name, ns)
			}
			if mem := c.Memory; mem != nil && mem.WorkingSetBytes != nil {
				add(containerMemoryUsageDesc, prometheus.GaugeValue, mem.Time.Time, float64(*mem.WorkingSetBytes), c.Name, name, ns)
			}
		}
	}
	return out
}
