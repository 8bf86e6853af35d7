package server

// Tests of the pressure stall information in /stats/summary, over a fake
// cgroup2 hierarchy in t.TempDir() (fakeCgroups: the root's and each pod's
// folder, holding the kernel's pressure files or not) with the CRI fake of
// stats_test.go, whose stats carry no PSI, as containerd 1.6's, unless a
// test gives them some.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeCgroups is a cgroup2 hierarchy in a temp dir: root is its top ("" on
// cgroup v1), pods the pods' folders in it.
type fakeCgroups struct {
	root  string
	pods  map[types.UID]string
	calls int
}

func (c *fakeCgroups) UnifiedRootDir() (string, bool) {
	c.calls++
	return c.root, c.root != ""
}

func (c *fakeCgroups) UnifiedPodDir(uid types.UID) (string, bool) {
	c.calls++
	dir, ok := c.pods[uid]
	return dir, ok
}

// Pressure files as the kernel writes them: the machine's (whose
// cpu.pressure has a full line of zeros), and pod web's.
var (
	nodePressureFiles = map[string]string{
		"cpu.pressure":    "some avg10=1.50 avg60=0.75 avg300=0.25 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"memory.pressure": "some avg10=0.10 avg60=0.00 avg300=0.00 total=5000\nfull avg10=0.05 avg60=0.00 avg300=0.00 total=2500\n",
		"io.pressure":     "some avg10=2.00 avg60=1.00 avg300=0.50 total=900000\nfull avg10=1.00 avg60=0.50 avg300=0.25 total=450000\n",
	}
	podPressureFiles = map[string]string{
		"cpu.pressure":    "some avg10=12.00 avg60=6.00 avg300=2.00 total=777\nfull avg10=10.00 avg60=5.00 avg300=1.00 total=666\n",
		"memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"io.pressure":     "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=21\n",
	}
)

// newFakeCgroups lays out the root's and pod web's folders, each with the
// files given.
func newFakeCgroups(t *testing.T, node, web map[string]string) *fakeCgroups {
	t.Helper()
	root := t.TempDir()
	podDir := filepath.Join(root, "kubepods", "burstable", "poduid-web")
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for dir, files := range map[string]map[string]string{root: node, podDir: web} {
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &fakeCgroups{root: root, pods: map[types.UID]string{"uid-web": podDir}}
}

// serveSummary serves /stats/summary from p, and returns its body,
// decoded and raw.
func serveSummary(t *testing.T, p *statsProvider) (statsapi.Summary, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	(&Server{stats: p}).serveStatsSummary(rec, httptest.NewRequest(http.MethodGet, "/stats/summary", nil))
	var summary statsapi.Summary
	if err := json.Unmarshal(rec.Body.Bytes(), &summary); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("/stats/summary: %d %v %s", rec.Code, err, rec.Body)
	}
	return summary, rec.Body.String()
}

func TestStatsSummaryHasTheCgroupsPressure(t *testing.T) {
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	p := newTestStatsProvider(statsRuntime(), clk)
	p.cgroups = newFakeCgroups(t, nodePressureFiles, podPressureFiles)
	summary, body := serveSummary(t, p)

	now := metav1.NewTime(clk.Now())
	node := summary.Node
	wantNode := map[string]*statsapi.PSIStats{
		"cpu": {Some: statsapi.PSIData{Avg10: 1.5, Avg60: 0.75, Avg300: 0.25, Total: 123456}},
		"memory": {Some: statsapi.PSIData{Avg10: 0.1, Total: 5000},
			Full: statsapi.PSIData{Avg10: 0.05, Total: 2500}},
		"io": {Some: statsapi.PSIData{Avg10: 2, Avg60: 1, Avg300: 0.5, Total: 900000},
			Full: statsapi.PSIData{Avg10: 1, Avg60: 0.5, Avg300: 0.25, Total: 450000}},
	}
	if diff := cmp.Diff(wantNode, map[string]*statsapi.PSIStats{"cpu": node.CPU.PSI, "memory": node.Memory.PSI, "io": node.IO.PSI}); diff != "" {
		t.Errorf("the node's pressure (-want +got):\n%s", diff)
	}
	if !node.IO.Time.Equal(&now) {
		t.Errorf("the node's IO stats are of %v, want %v (when the pressure was read)", node.IO.Time, now)
	}

	pod := summary.Pods[0]
	wantPod := map[string]*statsapi.PSIStats{
		"cpu": {Some: statsapi.PSIData{Avg10: 12, Avg60: 6, Avg300: 2, Total: 777},
			Full: statsapi.PSIData{Avg10: 10, Avg60: 5, Avg300: 1, Total: 666}},
		"memory": {},
		"io":     {Some: statsapi.PSIData{Total: 42}, Full: statsapi.PSIData{Total: 21}},
	}
	if diff := cmp.Diff(wantPod, map[string]*statsapi.PSIStats{"cpu": pod.CPU.PSI, "memory": pod.Memory.PSI, "io": pod.IO.PSI}); diff != "" {
		t.Errorf("pod web's pressure (-want +got):\n%s", diff)
	}
	// The containers' come from the runtime, which gives none.
	for _, c := range pod.Containers {
		if c.CPU.PSI != nil || c.Memory.PSI != nil || c.IO != nil {
			t.Errorf("container %s has pressure %+v, %+v, %+v; the runtime gave none", c.Name, c.CPU.PSI, c.Memory.PSI, c.IO)
		}
	}
	// The wire shape, as the kubelet's: both halves, the total in the
	// kernel's microseconds, the averages in percent.
	for _, want := range []string{
		`"cpu":{"time":"2026-11-22T01:00:10Z","usageCoreNanoSeconds":3000000000,"psi":{"full":{"total":666,"avg10":10,"avg60":5,"avg300":1},"some":{"total":777,"avg10":12,"avg60":6,"avg300":2}}}`,
		`"io":{"time":"2026-11-22T01:00:10Z","psi":{"full":{"total":450000,"avg10":1,"avg60":0.5,"avg300":0.25},"some":{"total":900000,"avg10":2,"avg60":1,"avg300":0.5}}}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/stats/summary lacks %s:\n%s", want, body)
		}
	}
}

// TestStatsSummaryWithoutPressure: on cgroup v1, on a kernel without PSI
// (no pressure files), and where a file is not the kernel's, `psi` is left
// out of what has none, and the summary is served all the same.
func TestStatsSummaryWithoutPressure(t *testing.T) {
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	damaged := map[string]string{"cpu.pressure": "some avg10=??\n", "memory.pressure": podPressureFiles["memory.pressure"]}
	tests := map[string]struct {
		cgroups *fakeCgroups
		// memory is the memory pressure of the node and of the pod.
		memory *statsapi.PSIStats
	}{
		"cgroup v1":            {cgroups: &fakeCgroups{}},
		"a kernel without PSI": {cgroups: newFakeCgroups(t, nil, nil)},
		"a damaged cpu.pressure, no io.pressure, memory.pressure whole": {
			cgroups: newFakeCgroups(t, damaged, damaged), memory: &statsapi.PSIStats{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := newTestStatsProvider(statsRuntime(), clk)
			p.cgroups = tc.cgroups
			summary, body := serveSummary(t, p)
			node, pod := summary.Node, summary.Pods[0]
			if node.CPU.PSI != nil || pod.CPU.PSI != nil || node.IO != nil || pod.IO != nil {
				t.Errorf("CPU or IO pressure where there is none: %s", body)
			}
			if diff := cmp.Diff(map[string]*statsapi.PSIStats{"node": tc.memory, "pod": tc.memory},
				map[string]*statsapi.PSIStats{"node": node.Memory.PSI, "pod": pod.Memory.PSI}); diff != "" {
				t.Errorf("memory pressure (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResourceMetricsReadNoPressure: the summary behind /metrics/resource,
// scraped often, has no PSI and locates no cgroup.
func TestResourceMetricsReadNoPressure(t *testing.T) {
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	p := newTestStatsProvider(statsRuntime(), clk)
	cgroups := newFakeCgroups(t, nodePressureFiles, podPressureFiles)
	p.cgroups = cgroups
	if _, err := (&resourceCollector{stats: p}).stats.summary(t.Context()); err != nil {
		t.Fatal(err)
	}
	if cgroups.calls != 0 {
		t.Errorf("the resource metrics' summary located %d cgroups", cgroups.calls)
	}
}

// TestStatsSummaryHasTheRuntimesPressure: a runtime whose stats carry PSI
// (CRI v1.36's fields) gives the containers theirs and the pod its own
// where its cgroup has none; the pod's cgroup wins over the runtime's
// reading of it.
func TestStatsSummaryHasTheRuntimesPressure(t *testing.T) {
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	runtime := statsRuntime()
	psi := func(total uint64) *runtimeapi.PsiStats {
		return &runtimeapi.PsiStats{Some: &runtimeapi.PsiData{Total: total, Avg10: 1.25}}
	}
	at := statsT0.Add(9 * time.Second)
	app := runtime.FakeContainerStats["c-app"]
	app.Cpu.Psi, app.Memory.Psi = psi(1), psi(2)
	app.Io = &runtimeapi.IoUsage{Timestamp: at.UnixNano(), Psi: &runtimeapi.PsiStats{Full: &runtimeapi.PsiData{Total: 3}}}
	web := runtime.FakePodSandboxStats["sb-web"].Linux
	web.Cpu.Psi, web.Memory.Psi = psi(10), psi(20)
	web.Io = &runtimeapi.IoUsage{Timestamp: at.UnixNano(), Psi: psi(30)}

	p := newTestStatsProvider(runtime, clk)
	p.cgroups = newFakeCgroups(t, nil, map[string]string{"cpu.pressure": podPressureFiles["cpu.pressure"]})
	summary, _ := serveSummary(t, p)

	some := func(total uint64) *statsapi.PSIStats {
		return &statsapi.PSIStats{Some: statsapi.PSIData{Total: total, Avg10: 1.25}}
	}
	pod, container := summary.Pods[0], summary.Pods[0].Containers[0]
	got := map[string]*statsapi.PSIStats{
		"pod cpu": pod.CPU.PSI, "pod memory": pod.Memory.PSI, "pod io": pod.IO.PSI,
		"app cpu": container.CPU.PSI, "app memory": container.Memory.PSI, "app io": container.IO.PSI,
	}
	want := map[string]*statsapi.PSIStats{
		"pod cpu": {Some: statsapi.PSIData{Avg10: 12, Avg60: 6, Avg300: 2, Total: 777},
			Full: statsapi.PSIData{Avg10: 10, Avg60: 5, Avg300: 1, Total: 666}},
		"pod memory": some(20), "pod io": some(30),
		"app cpu": some(1), "app memory": some(2), "app io": {Full: statsapi.PSIData{Total: 3}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pressure (-want +got):\n%s", diff)
	}
	if want := metav1.NewTime(at); !container.IO.Time.Equal(&want) || !pod.IO.Time.Equal(&want) {
		t.Errorf("IO stats of %v (app) and %v (pod), want the runtime's %v", container.IO.Time, pod.IO.Time, want)
	}
}
