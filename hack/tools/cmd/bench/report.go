package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// agentNames are the two sides of every figure, nodelet first: ratios are
// nodelet's over the kubelet's.
var agentNames = []string{"nodelet", "kubelet"}

// figure is one row of the table: one number per run for each agent.
type figure struct {
	Workload string
	Name     string
	Unit     string
	Values   map[string][]float64
	// Floor is the runtime's own figure for the same work (nodelet's
	// runtime, straight through CRI), where the row has one.
	Floor []float64
	// Summaries, the ratios and verdict are filled by decide.
	Summaries map[string]Summary
	Ratio     float64
	// FloorRatio is nodelet's median over its runtime's floor.
	FloorRatio float64
	Verdict    Verdict
}

func (f *figure) decide() {
	f.Summaries = map[string]Summary{}
	for _, name := range agentNames {
		f.Summaries[name] = Summarize(f.Values[name])
	}
	f.Ratio = Ratio(f.Summaries["nodelet"], f.Summaries["kubelet"])
	f.FloorRatio = Ratio(f.Summaries["nodelet"], Summarize(f.Floor))
	f.Verdict = Compare(f.Summaries["nodelet"], f.Summaries["kubelet"])
}

const mib = 1 << 20

// userPodTitle names the users' pod workload in the table; the header
// line says what the pod holds.
const userPodTitle = "users' pod (token, ConfigMap, Secret env)"

// perAgent reads one figure's values, one per run, from an agent's results.
type perAgent func(a *AgentResults) []float64

// rowAdder adds a row of the table; floor (nil: none) reads the runtime's
// own figure for the same work, which nodelet's is compared with.
type rowAdder func(workload, name, unit string, floor, per perAgent)

// figures turns the raw results into the table's rows.
func figures(results *Results) []*figure {
	var rows []*figure
	// addFloored adds a row compared with floor, the same work's floor on
	// nodelet's runtime (nil: none).
	addFloored := func(workload, name, unit string, floor, per perAgent) {
		f := &figure{Workload: workload, Name: name, Unit: unit, Values: map[string][]float64{}}
		for _, agentName := range agentNames {
			if a := results.Agents[agentName]; a != nil {
				f.Values[agentName] = per(a)
			}
		}
		if a := results.Agents["nodelet"]; a != nil && floor != nil {
			f.Floor = floor(a)
		}
		f.decide()
		rows = append(rows, f)
	}
	add := func(workload, name, unit string, per perAgent) { addFloored(workload, name, unit, nil, per) }
	singleFloor := func(a *AgentResults) []float64 {
		return collect(a.Floor, func(r FloorRun) float64 { return r.Seconds })
	}
	burstFloorOf := func(n int, workload string, value func(BurstFloorRun) float64) perAgent {
		return func(a *AgentResults) []float64 {
			runs := slices.DeleteFunc(slices.Clone(a.BurstFloor), func(r BurstFloorRun) bool { return r.Pods != n || r.Workload != workload })
			return collect(runs, value)
		}
	}
	nodeSplit := len(results.Settings.NodeCPUs) > 0
	floorsOf := func(n int, workload string) burstFloors {
		of := func(value func(BurstFloorRun) float64) perAgent { return burstFloorOf(n, workload, value) }
		floors := burstFloors{
			time:       of(func(r BurstFloorRun) float64 { return r.Seconds }),
			machineCPU: of(func(r BurstFloorRun) float64 { return r.MachineCPUSeconds }),
			runtimeCPU: of(func(r BurstFloorRun) float64 { return r.ContainerdCPUSeconds }),
		}
		if nodeSplit {
			floors.nodeCPU = of(func(r BurstFloorRun) float64 { return r.NodeCPUSeconds })
		}
		return floors
	}
	burstKinds := []struct {
		workload, title string
		sizes           []int
	}{{"", "burst of %d", results.Settings.Bursts}, {userWorkload, "burst of %d users' pods", results.Settings.UserBursts}}

	add("runtime floor (CRI, no agent)", "sandbox+create+start", "s", singleFloor)
	for _, kind := range burstKinds {
		for _, n := range kind.sizes {
			title, floors := fmt.Sprintf(kind.title, n), floorsOf(n, kind.workload)
			add("runtime floor (CRI, no agent)", fmt.Sprintf("%s, %d at a time", title, floorParallelism(results, kind.workload)), "s", floors.time)
			add("runtime floor (CRI, no agent)", title+", machine CPU", "CPU-s", floors.machineCPU)
			if floors.nodeCPU != nil {
				add("runtime floor (CRI, no agent)", title+", node CPU", "CPU-s", floors.nodeCPU)
			}
			add("runtime floor (CRI, no agent)", title+", containerd CPU", "CPU-s", floors.runtimeCPU)
		}
	}

	addFloored("one pod at a time", "create → Ready", "s", singleFloor, func(a *AgentResults) []float64 {
		return collect(a.Single, func(r PodRun) float64 { return r.ReadySeconds })
	})
	add("one pod at a time", "delete → gone", "s", func(a *AgentResults) []float64 {
		return collect(a.Single, func(r PodRun) float64 { return r.GoneSeconds })
	})
	add("one pod at a time", "API requests per pod", "req", func(a *AgentResults) []float64 {
		return collect(a.Single, func(r PodRun) float64 { return requestTotal(r.Requests) })
	})

	initName := "init container"
	if results.Settings.ReadinessOn {
		initName += " + readiness probe"
	}
	add(initName, "create → Ready", "s", func(a *AgentResults) []float64 {
		return collect(a.Init, func(r PodRun) float64 { return r.ReadySeconds })
	})

	add(userPodTitle, "create → Ready", "s", func(a *AgentResults) []float64 {
		return collect(a.UserPods, func(r PodRun) float64 { return r.ReadySeconds })
	})
	add(userPodTitle, "API requests per pod", "req", func(a *AgentResults) []float64 {
		return collect(a.UserPods, func(r PodRun) float64 { return requestTotal(r.Requests) })
	})
	add("three containers + readiness probe", "create → Ready", "s", func(a *AgentResults) []float64 {
		return collect(a.ThreeContainers, func(r PodRun) float64 { return r.ReadySeconds })
	})

	for _, kind := range burstKinds {
		for _, n := range kind.sizes {
			burstRows(addFloored, fmt.Sprintf(kind.title, n), floorsOf(n, kind.workload), func(a *AgentResults) []BurstRun {
				return slices.DeleteFunc(slices.Clone(a.Bursts), func(b BurstRun) bool { return b.Pods != n || b.Workload != kind.workload })
			})
		}
	}

	if results.Settings.IdleRuns > 0 {
		workload := fmt.Sprintf("%d pods idle, %s", results.Settings.IdlePods, results.Settings.IdleFor)
		add(workload, "agent CPU", "CPU-s", func(a *AgentResults) []float64 {
			return collect(a.Idle, func(r IdleRun) float64 { return r.Agent.CPUSeconds })
		})
		add(workload, "agent peak RSS", "MiB", func(a *AgentResults) []float64 {
			return collect(a.Idle, func(r IdleRun) float64 { return float64(r.Agent.PeakRSSBytes) / mib })
		})
		add(workload, "CRI calls containerd served", "/s", func(a *AgentResults) []float64 {
			return collect(a.Idle, func(r IdleRun) float64 { return r.CRICalls / r.Seconds })
		})
		add(workload, "containerd CPU", "CPU-s", func(a *AgentResults) []float64 {
			return collect(a.Idle, func(r IdleRun) float64 { return r.Containerd.CPUSeconds })
		})
		add(workload, "API requests", "/min", func(a *AgentResults) []float64 {
			return collect(a.Idle, func(r IdleRun) float64 { return requestTotal(r.Requests) / r.Seconds * 60 })
		})
	}
	return rows
}

// burstFloors are a burst's floor figures: its time, the machine's, the
// node's (nil without CPUs of its own) and the runtime's CPU.
type burstFloors struct {
	time, machineCPU, nodeCPU, runtimeCPU perAgent
}

// floorParallelism is how many pods at a time the burst floor of workload
// started: each workload's was found on its own.
func floorParallelism(results *Results, workload string) int {
	for _, a := range results.Agents {
		for _, run := range a.BurstFloor {
			if run.Workload == workload {
				return run.Parallelism
			}
		}
	}
	return results.Settings.FloorParallelism
}

// burstRows adds the rows of one burst workload: latencies, all Ready
// (against floor, the runtime's own burst), the agent's use, deletion and
// requests; the node's CPU use too when the node had CPUs of its own
// (floors.nodeCPU not nil).
func burstRows(addFloored rowAdder, workload string, floors burstFloors, bursts func(a *AgentResults) []BurstRun) {
	add := func(workload, name, unit string, per perAgent) { addFloored(workload, name, unit, nil, per) }
	for _, p := range []float64{50, 90, 99} {
		add(workload, fmt.Sprintf("start latency p%.0f", p), "s", func(a *AgentResults) []float64 {
			return collect(bursts(a), func(b BurstRun) float64 { return Percentile(b.ReadySeconds, p) })
		})
	}
	addFloored(workload, "all Ready", "s", floors.time, func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return b.AllReadySeconds })
	})
	add(workload, "agent CPU, create → all Ready", "CPU-s", func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return b.Agent.CPUSeconds })
	})
	// What every process used, the control plane's share of the work
	// included: on a machine of few CPUs, all Ready can be no shorter than
	// this over the CPUs, and its ratio to the floor's bounds the other.
	addFloored(workload, "machine CPU, create → all Ready", "CPU-s", floors.machineCPU, func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return b.MachineCPUSeconds })
	})
	if floors.nodeCPU != nil {
		addFloored(workload, "node CPU, create → all Ready", "CPU-s", floors.nodeCPU, func(a *AgentResults) []float64 {
			return collect(bursts(a), func(b BurstRun) float64 { return b.NodeCPUSeconds })
		})
	}
	// The runtime's own share of the node's: what the agent's calls cost
	// it beyond the floor's.
	addFloored(workload, "containerd CPU, create → all Ready", "CPU-s", floors.runtimeCPU, func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return b.ContainerdCPUSeconds })
	})
	add(workload, "agent peak RSS, create → all Ready", "MiB", func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return float64(b.Agent.PeakRSSBytes) / mib })
	})
	add(workload, "all deleted → all gone", "s", func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return b.AllGoneSeconds })
	})
	add(workload, "agent CPU, delete → all gone", "CPU-s", func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return b.AgentDeleting.CPUSeconds })
	})
	add(workload, "API requests per pod", "req", func(a *AgentResults) []float64 {
		return collect(bursts(a), func(b BurstRun) float64 { return requestTotal(b.Requests) / float64(b.Pods) })
	})
}

func collect[T any](runs []T, value func(T) float64) []float64 {
	values := make([]float64, 0, len(runs))
	for _, run := range runs {
		values = append(values, value(run))
	}
	return values
}

func requestTotal(c *requestCounts) float64 {
	if c == nil {
		return math.NaN()
	}
	return float64(c.Total)
}

// --- output ---------------------------------------------------------------------

func runReport(args []string) error {
	var in, outDir string
	flags := flag.NewFlagSet("report", flag.ExitOnError)
	flags.StringVar(&in, "in", "bench.json", "the raw results")
	flags.StringVar(&outDir, "out-dir", "bench/results", "where bench.json, bench.md, bench.txt and bench.png go")
	_ = flags.Parse(args)
	results, err := readResults(in)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("making the results folder: %w", err)
	}
	rows := figures(results)

	var text strings.Builder
	writeText(&text, results, rows)
	fmt.Print(text.String())
	if err := os.WriteFile(filepath.Join(outDir, "bench.txt"), []byte(text.String()), 0o644); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	var md strings.Builder
	writeMarkdown(&md, results, rows)
	if err := os.WriteFile(filepath.Join(outDir, "bench.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if filepath.Clean(in) != filepath.Join(outDir, "bench.json") {
		if err := writeResults(filepath.Join(outDir, "bench.json"), results); err != nil {
			return err
		}
	}
	if err := writeChart(filepath.Join(outDir, "bench.png"), results); err != nil {
		return err
	}
	log.Printf("wrote bench.txt, bench.md, bench.json and bench.png to %s", outDir)
	return nil
}

// describeRun is the header both tables share: what ran where and how.
func describeRun(results *Results) []string {
	m := results.Machine
	minLoad, maxLoad := math.Inf(1), math.Inf(-1)
	for _, load := range m.Loads {
		minLoad, maxLoad = math.Min(minLoad, load), math.Max(maxLoad, load)
	}
	lines := []string{
		fmt.Sprintf("%s, %s UTC, %s", results.Started.UTC().Format(time.DateOnly), results.Started.UTC().Format("15:04"),
			results.Finished.Sub(results.Started).Round(time.Second)),
		fmt.Sprintf("machine: %s, %d CPUs (%s), %.0f GiB, kernel %s", m.OS, m.CPUs, m.CPUModel, float64(m.MemoryBytes)/(1<<30), m.Kernel),
	}
	if len(m.Loads) > 0 {
		lines = append(lines, fmt.Sprintf("1-minute load average at the start of each run: %.2f to %.2f", minLoad, maxLoad))
	}
	for _, name := range agentNames {
		if a := results.Agents[name]; a != nil {
			lines = append(lines, fmt.Sprintf("%s %s on node %s, runtime %s", name, a.Version, a.Node, a.RuntimeVersion))
		}
	}
	s := results.Settings
	if len(s.NodeCPUs) > 0 {
		lines = append(lines, fmt.Sprintf("CPUs: the node (runtimes, shims, pods, agents, the burst floor's client) on %v, the control plane, the registries and the bench's client on the others", s.NodeCPUs))
	}
	lines = append(lines, fmt.Sprintf("runs per agent: one pod %d, init %d, users' pod %d, three containers %d, %s, floor %d; containers %s, init and users' containers %s",
		s.SingleRuns, s.InitRuns, s.UserRuns, s.ThreeRuns, describeBursts(s), floorRuns(results), s.Image, s.InitImage))
	lines = append(lines, "each figure is min / median / max over its runs; ratio = nodelet's median / kubelet's; "+
		"a figure whose two min..max ranges overlap is a tie; nodelet/floor = nodelet's median / its runtime's floor for the same pods straight through CRI")
	return lines
}

func describeBursts(s Settings) string {
	var parts []string
	for _, n := range s.Bursts {
		parts = append(parts, fmt.Sprintf("burst of %d ×%d", n, s.BurstRuns[n]))
	}
	for _, n := range s.UserBursts {
		parts = append(parts, fmt.Sprintf("burst of %d users' pods ×%d", n, s.UserBurstRuns[n]))
	}
	return strings.Join(parts, ", ")
}

func floorRuns(results *Results) int {
	if a := results.Agents["nodelet"]; a != nil {
		return len(a.Floor)
	}
	return 0
}

func writeText(w io.Writer, results *Results, rows []*figure) {
	for _, line := range describeRun(results) {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	header := []string{"workload", "figure", "unit", "nodelet", "kubelet", "ratio", "verdict", "nodelet/floor"}
	table := [][]string{header}
	for _, row := range rows {
		table = append(table, []string{row.Workload, row.Name, row.Unit,
			spread(row.Summaries["nodelet"]), spread(row.Summaries["kubelet"]), ratio(row.Ratio), string(row.Verdict), ratio(row.FloorRatio)})
	}
	widths := make([]int, len(header))
	for _, cells := range table {
		for i, cell := range cells {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, cells := range table {
		for i, cell := range cells {
			pad := widths[i] - len([]rune(cell))
			if i < len(cells)-1 {
				pad += 2
			} else {
				pad = 0
			}
			fmt.Fprint(w, cell, strings.Repeat(" ", pad))
		}
		fmt.Fprintln(w)
	}
	writeBreakdown(w, results, false)
}

func writeMarkdown(w io.Writer, results *Results, rows []*figure) {
	for _, line := range describeRun(results) {
		fmt.Fprintf(w, "%s  \n", line)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | figure | unit | nodelet | kubelet | nodelet/kubelet | verdict | nodelet/floor |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
	last := ""
	for _, row := range rows {
		workload := row.Workload
		if workload == last {
			workload = ""
		}
		last = row.Workload
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", workload, row.Name, row.Unit,
			spread(row.Summaries["nodelet"]), spread(row.Summaries["kubelet"]), ratio(row.Ratio), row.Verdict, ratio(row.FloorRatio))
	}
	writeBreakdown(w, results, true)
}

// spread prints a summary as "min / median / max".
func spread(s Summary) string {
	if s.Runs == 0 {
		return "–"
	}
	return fmt.Sprintf("%s / %s / %s", number(s.Min), number(s.Median), number(s.Max))
}

func ratio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", r)
}

// number prints a figure with three significant digits or so.
func number(v float64) string {
	switch a := math.Abs(v); {
	case math.IsNaN(v):
		return "?"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}
