package server

// Tests of the stats summary and the resource metrics, against the CRI
// fake (k8s.io/cri-api/pkg/apis/testing) holding stats as containerd 1.6
// reports them (cumulative CPU only), and fixed host counters.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

var statsT0 = time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)

// statsRuntime is a runtime running pod web (containers app and sidecar)
// and a stopped pod gone, plus a container that is not nodelet's.
func statsRuntime() *critesting.FakeRuntimeService {
	fake := critesting.NewFakeRuntimeService()
	labels := func(uid, name string) map[string]string {
		return map[string]string{kubecontainer.LabelPodUID: uid, kubecontainer.LabelPodName: name, kubecontainer.LabelPodNamespace: "ns"}
	}
	fake.SetFakeSandboxes([]*critesting.FakePodSandbox{
		{PodSandboxStatus: runtimeapi.PodSandboxStatus{
			Id: "sb-web", State: runtimeapi.PodSandboxState_SANDBOX_READY, CreatedAt: statsT0.UnixNano(),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "ns", Uid: "uid-web"},
			Labels:   labels("uid-web", "web"),
		}},
		{PodSandboxStatus: runtimeapi.PodSandboxStatus{
			Id: "sb-gone", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: statsT0.UnixNano(),
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "gone", Namespace: "ns", Uid: "uid-gone"},
			Labels:   labels("uid-gone", "gone"),
		}},
	})
	container := func(id, name string, state runtimeapi.ContainerState) *critesting.FakeContainer {
		l := labels("uid-web", "web")
		l[kubecontainer.LabelContainerName] = name
		return &critesting.FakeContainer{SandboxID: "sb-web", ContainerStatus: runtimeapi.ContainerStatus{
			Id: id, State: state, CreatedAt: statsT0.Add(time.Second).UnixNano(),
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Labels: l,
		}}
	}
	fake.SetFakeContainers([]*critesting.FakeContainer{
		container("c-app", "app", runtimeapi.ContainerState_CONTAINER_RUNNING),
		container("c-sidecar", "sidecar", runtimeapi.ContainerState_CONTAINER_RUNNING),
		container("c-app-old", "app", runtimeapi.ContainerState_CONTAINER_EXITED),
	})
	setStatsAt(fake, statsT0.Add(10*time.Second), 1)
	return fake
}

// setStatsAt gives every sandbox and container a reading at time at, with
// CPU usage growing by scale seconds per reading.
func setStatsAt(fake *critesting.FakeRuntimeService, at time.Time, scale uint64) {
	cpu := func(usage uint64) *runtimeapi.CpuUsage {
		return &runtimeapi.CpuUsage{
			Timestamp:            at.UnixNano(),
			UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: usage * scale},
			UsageNanoCores:       &runtimeapi.UInt64Value{},
		}
	}
	memory := func(ws uint64) *runtimeapi.MemoryUsage {
		return &runtimeapi.MemoryUsage{
			Timestamp:       at.UnixNano(),
			WorkingSetBytes: &runtimeapi.UInt64Value{Value: ws},
			UsageBytes:      &runtimeapi.UInt64Value{Value: ws + 100},
			AvailableBytes:  &runtimeapi.UInt64Value{},
		}
	}
	fake.SetFakePodSandboxStats([]*runtimeapi.PodSandboxStats{
		{
			Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb-web"},
			Linux: &runtimeapi.LinuxPodSandboxStats{
				Cpu:    cpu(3e9),
				Memory: memory(3000),
				Network: &runtimeapi.NetworkUsage{DefaultInterface: &runtimeapi.NetworkInterfaceUsage{
					Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 10}, TxBytes: &runtimeapi.UInt64Value{Value: 20},
				}},
			},
		},
	})
	fake.SetFakeContainerStats([]*runtimeapi.ContainerStats{
		{Attributes: &runtimeapi.ContainerAttributes{Id: "c-app"}, Cpu: cpu(2e9), Memory: memory(2000),
			WritableLayer: &runtimeapi.FilesystemUsage{Timestamp: at.UnixNano(), UsedBytes: &runtimeapi.UInt64Value{Value: 4096}}},
		{Attributes: &runtimeapi.ContainerAttributes{Id: "c-sidecar"}, Cpu: cpu(1e9), Memory: memory(1000)},
	})
}

func newTestStatsProvider(runtime *critesting.FakeRuntimeService, clk *clocktesting.FakeClock) *statsProvider {
	p := newStatsProvider("n1", "/", runtime, nil, clk)
	p.host = func() (hostStats, error) {
		return hostStats{
			at: clk.Now(), bootTime: statsT0.Add(-time.Hour),
			cpuUsage:    uint64(clk.Now().Sub(statsT0)) / 2, // half a core busy
			memoryTotal: 8000, memoryUsage: 6000, memoryWorkingSet: 5000,
		}, nil
	}
	return p
}

func TestStatsSummary(t *testing.T) {
	runtime := statsRuntime()
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	p := newTestStatsProvider(runtime, clk)

	first, err := p.summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(statsT0.Add(10 * time.Second))
	wantPod := statsapi.PodStats{
		PodRef:    statsapi.PodReference{Name: "web", Namespace: "ns", UID: "uid-web"},
		StartTime: metav1.NewTime(statsT0),
		Containers: []statsapi.ContainerStats{
			{
				Name: "app", StartTime: metav1.NewTime(statsT0.Add(time.Second)),
				CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To[uint64](2e9)},
				Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr.To[uint64](2000), UsageBytes: ptr.To[uint64](2100)},
				Rootfs: &statsapi.FsStats{Time: at, UsedBytes: ptr.To[uint64](4096)},
			},
			{
				Name: "sidecar", StartTime: metav1.NewTime(statsT0.Add(time.Second)),
				CPU:    &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To[uint64](1e9)},
				Memory: &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr.To[uint64](1000), UsageBytes: ptr.To[uint64](1100)},
			},
		},
		CPU:     &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To[uint64](3e9)},
		Memory:  &statsapi.MemoryStats{Time: at, WorkingSetBytes: ptr.To[uint64](3000), UsageBytes: ptr.To[uint64](3100)},
		Network: &statsapi.NetworkStats{Time: at, InterfaceStats: statsapi.InterfaceStats{Name: "eth0", RxBytes: ptr.To[uint64](10), TxBytes: ptr.To[uint64](20)}},
	}
	if diff := cmp.Diff([]statsapi.PodStats{wantPod}, first.Pods); diff != "" {
		t.Errorf("the first summary's pods (-want +got):\n%s", diff)
	}
	wantNode := statsapi.NodeStats{
		NodeName:  "n1",
		StartTime: metav1.NewTime(statsT0.Add(-time.Hour)),
		CPU:       &statsapi.CPUStats{Time: at, UsageCoreNanoSeconds: ptr.To[uint64](5e9)},
		Memory:    &statsapi.MemoryStats{Time: at, AvailableBytes: ptr.To[uint64](3000), UsageBytes: ptr.To[uint64](6000), WorkingSetBytes: ptr.To[uint64](5000)},
	}
	first.Node.Fs = nil // the real root file system's
	if diff := cmp.Diff(wantNode, first.Node); diff != "" {
		t.Errorf("the first summary's node (-want +got):\n%s", diff)
	}

	// Ten seconds later, each reading has doubled: the rates follow.
	clk.Step(10 * time.Second)
	setStatsAt(runtime, statsT0.Add(20*time.Second), 2)
	second, err := p.summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	rates := map[string]*uint64{
		"node":    second.Node.CPU.UsageNanoCores,
		"pod":     second.Pods[0].CPU.UsageNanoCores,
		"app":     second.Pods[0].Containers[0].CPU.UsageNanoCores,
		"sidecar": second.Pods[0].Containers[1].CPU.UsageNanoCores,
	}
	want := map[string]*uint64{"node": ptr.To[uint64](5e8), "pod": ptr.To[uint64](3e8), "app": ptr.To[uint64](2e8), "sidecar": ptr.To[uint64](1e8)}
	if diff := cmp.Diff(want, rates); diff != "" {
		t.Errorf("CPU rates of the second summary (-want +got):\n%s", diff)
	}
}

func TestStatsSummaryWithoutAPodsOwnStats(t *testing.T) {
	runtime := statsRuntime()
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	p := newTestStatsProvider(runtime, clk)
	// The sandbox stopped between the listing and its stats: the pod is
	// the sum of its containers.
	runtime.InjectError("PodSandboxStats", errTest)
	summary, err := p.summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(summary.Pods) != 1 || summary.Pods[0].CPU == nil || *summary.Pods[0].CPU.UsageCoreNanoSeconds != 3e9 ||
		*summary.Pods[0].Memory.WorkingSetBytes != 3000 || summary.Pods[0].Network != nil {
		t.Errorf("pods = %+v, want web with the sum of its containers' CPU and memory", summary.Pods)
	}
}

// TestStatsSummaryWhenTheContainerStatsListFails: containerd fails the
// whole ListContainerStats for one container removed while it lists; the
// summary then reads each running container's stats alone, and leaves out
// the one that is gone rather than failing (which /metrics/resource would
// serve as scrape_error 1, and kubectl top as no figures at all).
func TestStatsSummaryWhenTheContainerStatsListFails(t *testing.T) {
	runtime := statsRuntime()
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	p := newTestStatsProvider(runtime, clk)
	runtime.InjectError("ListContainerStats", status.Error(codes.NotFound, "failed to decode container metrics"))
	// The sidecar is removed meanwhile: its own stats are not found.
	delete(runtime.FakeContainerStats, "c-sidecar")
	summary, err := p.summary(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range summary.Pods[0].Containers {
		if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
			names = append(names, fmt.Sprintf("%s %d", c.Name, *c.CPU.UsageCoreNanoSeconds))
		}
	}
	if want := []string{"app 2000000000"}; !slices.Equal(names, want) {
		t.Errorf("containers with CPU stats = %q, want %q", names, want)
	}
}

func TestCPURate(t *testing.T) {
	last := cpuReading{at: 0, usage: 1e9}
	tests := map[string]struct {
		now      cpuReading
		haveLast bool
		want     uint64
		ok       bool
	}{
		"one core for a second": {now: cpuReading{at: 1e9, usage: 2e9}, haveLast: true, want: 1e9, ok: true},
		"a quarter core":        {now: cpuReading{at: 4e9, usage: 2e9}, haveLast: true, want: 25e7, ok: true},
		"no reading before":     {now: cpuReading{at: 1e9, usage: 2e9}},
		"no time passed":        {now: cpuReading{at: 0, usage: 2e9}, haveLast: true},
		"a counter that reset":  {now: cpuReading{at: 1e9, usage: 0}, haveLast: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := cpuRate(last, tc.now, tc.haveLast)
			if got != tc.want || ok != tc.ok {
				t.Errorf("cpuRate = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestResourceMetrics(t *testing.T) {
	runtime := statsRuntime()
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	registry := prometheus.NewRegistry()
	registry.MustRegister(&resourceCollector{stats: newTestStatsProvider(runtime, clk)})
	want := `
# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="ns",pod="web"} 2 1795309210000
container_cpu_usage_seconds_total{container="sidecar",namespace="ns",pod="web"} 1 1795309210000
# HELP container_memory_working_set_bytes Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="app",namespace="ns",pod="web"} 2000 1795309210000
container_memory_working_set_bytes{container="sidecar",namespace="ns",pod="web"} 1000 1795309210000
# HELP container_start_time_seconds Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="app",namespace="ns",pod="web"} 1.795309201e+09
container_start_time_seconds{container="sidecar",namespace="ns",pod="web"} 1.795309201e+09
# HELP node_cpu_usage_seconds_total Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 5 1795309210000
# HELP node_memory_working_set_bytes Current working set of the node in bytes
# TYPE node_memory_working_set_bytes gauge
node_memory_working_set_bytes 5000 1795309210000
# HELP pod_cpu_usage_seconds_total Cumulative cpu time consumed by the pod in core-seconds
# TYPE pod_cpu_usage_seconds_total counter
pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 3 1795309210000
# HELP pod_memory_working_set_bytes Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="ns",pod="web"} 3000 1795309210000
# HELP resource_scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
# HELP scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 0
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	// A runtime that fails: the scrape says so.
	runtime.InjectError("ListPodSandbox", errTest)
	want = `
# HELP scrape_error 1 if there was an error while getting container metrics, 0 otherwise
# TYPE scrape_error gauge
scrape_error 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "scrape_error"); err != nil {
		t.Error(err)
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("the runtime is down")

func TestParseHostStats(t *testing.T) {
	stat := []byte(`cpu  100 20 30 1000 50 5 5 10 0 0
cpu0 50 10 15 500 25 2 2 5 0 0
intr 12345
btime 1795300000
processes 42
`)
	meminfo := []byte(`MemTotal:        8000 kB
MemFree:         2000 kB
MemAvailable:    5000 kB
Inactive(file):  1000 kB
`)
	at := statsT0
	got, err := parseHostStats(at, stat, meminfo)
	if err != nil {
		t.Fatal(err)
	}
	want := hostStats{
		at:               at,
		bootTime:         time.Unix(1795300000, 0),
		cpuUsage:         (100 + 20 + 30 + 5 + 5 + 10) * uint64(time.Second/userHZ),
		memoryTotal:      8000 * 1024,
		memoryUsage:      6000 * 1024,
		memoryWorkingSet: 5000 * 1024,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(hostStats{})); diff != "" {
		t.Errorf("parseHostStats (-want +got):\n%s", diff)
	}
	if _, err := parseHostStats(at, []byte("intr 1\n"), meminfo); err == nil {
		t.Errorf("parseHostStats without a cpu line succeeded")
	}
	if _, err := parseHostStats(at, stat, []byte("MemFree: 1 kB\n")); err == nil {
		t.Errorf("parseHostStats without MemTotal succeeded")
	}
}
