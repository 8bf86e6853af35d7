// Unit tests of the bench's parsing and reporting, on made-up data and
// files in a temporary folder: nothing to run against.
package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseCPUBusyLeavesOutIdleAndIOWait(t *testing.T) {
	// Machine: user 100, nice 10, system 50, idle 9000, iowait 40, irq 5,
	// softirq 15, steal 20 ticks; guest and guest_nice are in user and
	// nice. cpu1 (the node's): 20+2+10+1+3+4 = 40 busy ticks.
	stat := "cpu  100 10 50 9000 40 5 15 20 7 1\ncpu0 50 5 25 4500 20 2 8 10 3 0\ncpu1 20 2 10 4500 20 1 3 4 0 0\nintr 1 2 3\n"
	got, err := parseCPUBusy([]byte(stat), []int{1})
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpuBusy{machine: 2.0, node: 0.4}); got != want {
		t.Errorf("parseCPUBusy() = %+v, want %+v (200 and 40 ticks)", got, want)
	}
	if got, err := parseCPUBusy([]byte(stat), nil); err != nil || got.node != 0 {
		t.Errorf("parseCPUBusy() without node CPUs = %+v, %v; want a node time of zero", got, err)
	}
	if _, err := parseCPUBusy([]byte("intr 1 2 3\n"), nil); err == nil {
		t.Error("a /proc/stat without its cpu line was read")
	}
	if _, err := parseCPUBusy([]byte(stat), []int{1, 2}); err == nil {
		t.Error("a node CPU missing from /proc/stat went unnoticed")
	}
}

func TestParseStatCPUCountsFromTheCommandNamesEnd(t *testing.T) {
	// A command name with spaces and a parenthesis; utime 150, stime 50,
	// cutime 20, cstime 30 ticks.
	stat := "4242 (kube let) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 20 30 20 0 12 0 100 1000 50 18446744073709551615"
	got, err := parseStatCPU([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 2.5; got != want {
		t.Errorf("parseStatCPU = %v, want %v", got, want)
	}
}

func TestCRICallsBetweenCountsOnlyTheCRIsServices(t *testing.T) {
	before := map[string]float64{"runtime.v1.RuntimeService/ListContainers": 10, "containerd.services.tasks.v1.Tasks/Get": 5}
	after := map[string]float64{
		"runtime.v1.RuntimeService/ListContainers":  40,
		"runtime.v1.RuntimeService/ListPodSandbox":  30,
		"runtime.v1.ImageService/ImageFsInfo":       2,
		"containerd.services.tasks.v1.Tasks/Get":    99,
		"runtime.v1.RuntimeService/ContainerStatus": 0,
	}
	total, perMethod := criCallsBetween(before, after)
	if total != 62 {
		t.Errorf("total = %v, want 62", total)
	}
	if perMethod["RuntimeService/ListContainers"] != 30 || perMethod["RuntimeService/ListPodSandbox"] != 30 || perMethod["ImageService/ImageFsInfo"] != 2 || len(perMethod) != 3 {
		t.Errorf("perMethod = %v", perMethod)
	}
}

func TestCountRequestsCountsEachRequestOnceInItsUsersWindowAcrossRotation(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	lines := []string{
		// In the window: a pod status patch and a watch logged twice.
		`{"auditID":"a","stage":"ResponseComplete","verb":"patch","user":{"username":"system:node:nodelet"},"objectRef":{"resource":"pods","subresource":"status"},"requestReceivedTimestamp":"2026-11-22T10:00:01.000000Z"}`,
		`{"auditID":"b","stage":"ResponseStarted","verb":"watch","user":{"username":"system:node:nodelet"},"objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-11-22T10:00:02.000000Z"}`,
		`{"auditID":"b","stage":"ResponseComplete","verb":"watch","user":{"username":"system:node:nodelet"},"objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-11-22T10:00:02.000000Z"}`,
		// The other agent's, an admin's, and one after the window.
		`{"auditID":"c","stage":"ResponseComplete","verb":"patch","user":{"username":"system:node:ref"},"objectRef":{"resource":"pods","subresource":"status"},"requestReceivedTimestamp":"2026-11-22T10:00:01.000000Z"}`,
		`{"auditID":"d","stage":"ResponseComplete","verb":"create","user":{"username":"admin"},"objectRef":{"resource":"pods"},"requestReceivedTimestamp":"2026-11-22T10:00:01.000000Z"}`,
		`{"auditID":"e","stage":"ResponseComplete","verb":"get","user":{"username":"system:node:nodelet"},"objectRef":{"resource":"nodes"},"requestReceivedTimestamp":"2026-11-22T10:00:09.000000Z"}`,
		`not json`,
	}
	// The first line went into a backup the API server rotated out.
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(filepath.Join(dir, "audit-2026-11-22T10-00-05.000.log"), []byte(lines[0]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines[1:], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nodelet := newAuditWindow("system:node:nodelet", t0, t0.Add(5*time.Second))
	ref := newAuditWindow("system:node:ref", t0, t0.Add(5*time.Second))
	if err := countRequests(path, []*auditWindow{nodelet, ref}); err != nil {
		t.Fatal(err)
	}
	if nodelet.Counts.Total != 2 || nodelet.Counts.ByKey["patch pods/status"] != 1 || nodelet.Counts.ByKey["watch pods"] != 1 {
		t.Errorf("nodelet's counts = %+v, want one status patch and one watch", nodelet.Counts)
	}
	if ref.Counts.Total != 1 {
		t.Errorf("ref's counts = %+v, want one request", ref.Counts)
	}
}

func TestParseBursts(t *testing.T) {
	sizes, runs, err := parseBursts("30:5,100:3")
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes[0] != 30 || sizes[1] != 100 || runs[30] != 5 || runs[100] != 3 {
		t.Errorf("parseBursts = %v %v", sizes, runs)
	}
	for _, bad := range []string{"30", "30:0", "x:1", "30:5,"} {
		if _, _, err := parseBursts(bad); err == nil {
			t.Errorf("parseBursts(%q) accepted", bad)
		}
	}
}

func TestIsQuietAllowsAFifthOfTheWatchedCPUs(t *testing.T) {
	for _, c := range []struct {
		busy  float64
		cpus  int
		quiet bool
	}{{0.1, 1, true}, {0.2, 1, true}, {0.3, 1, false}, {0.3, 2, true}, {0.5, 2, false}} {
		if got := isQuiet(c.busy, time.Second, c.cpus); got != c.quiet {
			t.Errorf("isQuiet(%v CPU-s in 1s on %d CPUs) = %v, want %v", c.busy, c.cpus, got, c.quiet)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for spec, want := range map[string][]int{"": nil, "1": {1}, "2-3": {2, 3}, "0-1,3": {0, 1, 3}} {
		got, err := parseCPUList(spec)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", spec, got, err, want)
		}
	}
	for _, bad := range []string{"x", "3-1", "1,", "-1"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) accepted", bad)
		}
	}
}

func TestTheNodesCPURowsComeOnlyWithCPUsOfItsOwn(t *testing.T) {
	hasNodeRows := func(rows []*figure) (floorRow, burstRow *figure) {
		for _, row := range rows {
			switch {
			case row.Workload == "runtime floor (CRI, no agent)" && row.Name == "burst of 3, node CPU":
				floorRow = row
			case row.Workload == "burst of 3" && row.Name == "node CPU, create → all Ready":
				burstRow = row
			}
		}
		return floorRow, burstRow
	}
	shared := madeUpResults()
	if floorRow, burstRow := hasNodeRows(figures(shared)); floorRow != nil || burstRow != nil {
		t.Error("a run whose node shared every CPU has node CPU rows")
	}
	split := madeUpResults()
	split.Settings.NodeCPUs = []int{1}
	for _, a := range split.Agents {
		for i := range a.Bursts {
			a.Bursts[i].NodeCPUSeconds = 0.9
		}
		for i := range a.BurstFloor {
			a.BurstFloor[i].NodeCPUSeconds = 0.6
		}
	}
	floorRow, burstRow := hasNodeRows(figures(split))
	if floorRow == nil || burstRow == nil {
		t.Fatalf("a run with the node on CPU 1 lacks a node CPU row: floor %v, burst %v", floorRow, burstRow)
	}
	if r := burstRow.FloorRatio; math.Abs(r-1.5) > 1e-9 {
		t.Errorf("node CPU nodelet/floor = %v, want 0.9 / 0.6", r)
	}
}

// madeUpResults are a small bench run in which nodelet starts pods clearly
// faster and uses about as much CPU as the kubelet.
func madeUpResults() *Results {
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	results := &Results{
		Started:  start,
		Finished: start.Add(10 * time.Minute),
		Machine:  Machine{CPUs: 2, MemoryBytes: 24 << 30, Kernel: "6.1", OS: "Debian", Loads: []float64{0.2, 0.4}},
		Settings: Settings{SingleRuns: 3, InitRuns: 2, Bursts: []int{3}, BurstRuns: map[int]int{3: 2}, IdlePods: 3, IdleRuns: 2,
			UserBursts: []int{3}, UserBurstRuns: map[int]int{3: 1}, FloorParallelism: 2,
			IdleFor: time.Minute, Image: "pause", InitImage: "busybox"},
		Agents: map[string]*AgentResults{},
	}
	for name, scale := range map[string]float64{"nodelet": 1, "kubelet": 2} {
		a := &AgentResults{Node: name, Version: "v1", RuntimeVersion: "containerd://1.6.20"}
		for i := range 3 {
			a.Single = append(a.Single, PodRun{ReadySeconds: scale * (0.2 + 0.01*float64(i)), GoneSeconds: 0.5, Requests: &requestCounts{Total: 7}})
			a.Floor = append(a.Floor, FloorRun{Seconds: 0.1 + 0.01*float64(i)})
		}
		for range 2 {
			a.Init = append(a.Init, PodRun{ReadySeconds: scale * 0.4})
			a.Bursts = append(a.Bursts, BurstRun{Pods: 3, ReadySeconds: []float64{scale * 0.3, scale * 0.4, scale * 0.5},
				AllReadySeconds: scale * 0.6, AllGoneSeconds: 1, Agent: procUsage{CPUSeconds: 0.5, PeakRSSBytes: 50 << 20}, ContainerdCPUSeconds: 0.3,
				Requests: &requestCounts{Total: 21}})
			a.Idle = append(a.Idle, IdleRun{Pods: 3, Seconds: 60, Agent: procUsage{CPUSeconds: 0.3 * scale, PeakRSSBytes: 60 << 20},
				CRICalls: 120 * scale, Requests: &requestCounts{Total: 12}})
		}
		// One burst of users' pods, each slower than the pause pods'.
		a.Bursts = append(a.Bursts, BurstRun{Workload: userWorkload, Pods: 3, ReadySeconds: []float64{scale, scale, scale},
			AllReadySeconds: scale * 1.2, AllGoneSeconds: 2, Requests: &requestCounts{Total: 30}})
		a.BurstFloor = []BurstFloorRun{{Pods: 3, Parallelism: 2, Seconds: 0.3, ContainerdCPUSeconds: 0.2}, {Pods: 3, Parallelism: 2, Seconds: 0.5, ContainerdCPUSeconds: 0.2},
			{Workload: userWorkload, Pods: 3, Parallelism: 4, Seconds: 0.8}}
		results.Agents[name] = a
	}
	return results
}

func TestFiguresDecideEachRowByItsSpread(t *testing.T) {
	rows := figures(madeUpResults())
	find := func(workload, name string) *figure {
		for _, row := range rows {
			if row.Workload == workload && row.Name == name {
				return row
			}
		}
		t.Fatalf("no row %q / %q", workload, name)
		return nil
	}
	single := find("one pod at a time", "create → Ready")
	if single.Verdict != VerdictNodelet || single.Ratio != 0.5 {
		t.Errorf("one pod: verdict %s ratio %v, want nodelet 0.5", single.Verdict, single.Ratio)
	}
	if cpu := find("burst of 3", "agent CPU, create → all Ready"); cpu.Verdict != VerdictTie {
		t.Errorf("equal CPU: verdict %s, want tie", cpu.Verdict)
	}
	if p99 := find("burst of 3", "start latency p99"); p99.Summaries["kubelet"].Median < 0.99 || p99.Summaries["kubelet"].Median > 1 {
		t.Errorf("kubelet's p99 of 0.6, 0.8, 1.0 = %v, want 0.996", p99.Summaries["kubelet"].Median)
	}
	if calls := find("3 pods idle, 1m0s", "CRI calls containerd served"); calls.Summaries["nodelet"].Median != 2 {
		t.Errorf("CRI calls/s = %v, want 2", calls.Summaries["nodelet"].Median)
	}
	if perPod := find("burst of 3", "API requests per pod"); perPod.Summaries["nodelet"].Median != 7 {
		t.Errorf("API requests per pod = %v, want 7", perPod.Summaries["nodelet"].Median)
	}
	// Against the runtime's own: one pod over the single floor (0.21 /
	// 0.11), a burst's all Ready over that burst size's floor (0.6 / 0.4).
	if r := single.FloorRatio; math.Abs(r-0.21/0.11) > 1e-9 {
		t.Errorf("one pod's nodelet/floor = %v, want %v", r, 0.21/0.11)
	}
	if r := find("burst of 3", "all Ready").FloorRatio; math.Abs(r-1.5) > 1e-9 {
		t.Errorf("burst's nodelet/floor = %v, want 1.5", r)
	}
	if r := find("burst of 3", "containerd CPU, create → all Ready").FloorRatio; math.Abs(r-1.5) > 1e-9 {
		t.Errorf("burst's containerd CPU nodelet/floor = %v, want 0.3 / 0.2", r)
	}
	if r := find("burst of 3", "start latency p50").FloorRatio; !math.IsNaN(r) {
		t.Errorf("a latency percentile has no floor to compare with, got nodelet/floor %v", r)
	}
	// The users' burst is a row set of its own, not mixed with the pause
	// pods' bursts of the same size.
	if users := find("burst of 3 users' pods", "all Ready"); users.Summaries["nodelet"].Runs != 1 || users.Summaries["nodelet"].Median != 1.2 {
		t.Errorf("users' burst all Ready = %+v, want its one run of 1.2s", users.Summaries["nodelet"])
	}
	if pause := find("burst of 3", "all Ready"); pause.Summaries["nodelet"].Runs != 2 {
		t.Errorf("pause burst all Ready has %d runs, want its own 2", pause.Summaries["nodelet"].Runs)
	}
	if floor := find("runtime floor (CRI, no agent)", "burst of 3, 2 at a time"); floor.Summaries["kubelet"].Median != 0.4 {
		t.Errorf("burst floor row = %+v, want a median of 0.4", floor.Summaries["kubelet"])
	}
	// The users' burst is set against the users' pods' own floor, found
	// at its own parallelism (1.2 / 0.8), not the pause pods'.
	if floor := find("runtime floor (CRI, no agent)", "burst of 3 users' pods, 4 at a time"); floor.Summaries["nodelet"].Median != 0.8 {
		t.Errorf("users' burst floor row = %+v, want a median of 0.8", floor.Summaries["nodelet"])
	}
	if r := find("burst of 3 users' pods", "all Ready").FloorRatio; math.Abs(r-1.5) > 1e-9 {
		t.Errorf("users' burst nodelet/floor = %v, want 1.5", r)
	}
}

func TestTheBurstFloorRunsAtTheFastestParallelism(t *testing.T) {
	tries := []BurstFloorRun{{Parallelism: 1, Seconds: 9}, {Parallelism: 4, Seconds: 3}, {Parallelism: 8, Seconds: 3.5}}
	if p := fastestParallelism(tries); p != 4 {
		t.Errorf("fastestParallelism = %d, want 4", p)
	}
	if counts, err := parseCounts("1, 2,8"); err != nil || !slices.Equal(counts, []int{1, 2, 8}) {
		t.Errorf("parseCounts = %v, %v", counts, err)
	}
	for _, bad := range []string{"", "0", "2,x"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

func TestReportWritesTheTablesTheJSONAndAChart(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "raw.json")
	if err := writeResults(in, madeUpResults()); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	if err := runReport([]string{"-in", in, "-out-dir", out}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "bench.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| one pod at a time | create → Ready | s | 0.200 / 0.210 / 0.220 | 0.400 / 0.420 / 0.440 | 0.50 | nodelet |") {
		t.Errorf("bench.md lacks the one-pod row:\n%s", md)
	}
	if _, err := readResults(filepath.Join(out, "bench.json")); err != nil {
		t.Error(err)
	}
	file, err := os.Open(filepath.Join(out, "bench.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	img, err := png.Decode(file)
	if err != nil {
		t.Fatalf("bench.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 500 {
		t.Errorf("bench.png is %v, want a readable size", b)
	}
}
