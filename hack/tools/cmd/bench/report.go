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
	// Summaries, ratio and verdict are filled by decide.
	Summaries map[string]Summary
	Ratio     float64
	Verdict   Verdict
}

func (f *figure) decide() {
	f.Summaries = map[string]Summary{}
	for _, name := range agentNames {
		f.Summaries[name] = Summarize(f.Values[name])
	}
	f.Ratio = Ratio(f.Summaries["nodelet"], f.Summaries["kubelet"])
	f.Verdict = Compare(f.Summaries["nodelet"], f.Summaries["kubelet"])
}

const mib = 1 << 20

// figures turns the raw results into the table's rows.
func figures(results *Results) []*figure {
	var rows []*figure
	add := func(workload, name, unit string, per func(a *AgentResults) []float64) {
		f := &figure{Workload: workload, Name: name, Unit: unit, Values: map[string][]float64{}}
		for _, agentName := range agentNames {
			if a := results.Agents[agentName]; a != nil {
				f.Values[agentName] = per(a)
			}
		}
		f.decide()
		rows = append(rows, f)
	}

	add("runtime floor (CRI, no agent)", "sandbox+create+start", "s", func(a *AgentResults) []float64 {
		return collect(a.Floor, func(r FloorRun) float64 { return r.Seconds })
	})

	add("one pod at a time", "create → Ready", "s", func(a *AgentResults) []float64 {
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

	for _, n := range results.Settings.Bursts {
		workload := fmt.Sprintf("burst of %d", n)
		bursts := func(a *AgentResults) []BurstRun {
			return slices.DeleteFunc(slices.Clone(a.Bursts), func(b BurstRun) bool { return b.Pods != n })
		}
		for _, p := range []float64{50, 90, 99} {
			add(workload, fmt.Sprintf("start latency p%.0f", p), "s", func(a *AgentResults) []float64 {
				return collect(bursts(a), func(b BurstRun) float64 { return Percentile(b.ReadySeconds, p) })
			})
		}
		add(workload, "all Ready", "s", func(a *AgentResults) []float64 {
			return collect(bursts(a), func(b BurstRun) float64 { return b.AllReadySeconds })
		})
		add(workload, "agent CPU, create → all Ready", "CPU-s", func(a *AgentResults) []float64 {
			return collect(bursts(a), func(b BurstRun) float64 { return b.Agent.CPUSeconds })
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
	lines = append(lines, fmt.Sprintf("runs per agent: one pod %d, init %d, %s, floor %d; containers %s, init containers %s",
		s.SingleRuns, s.InitRuns, describeBursts(s), floorRuns(results), s.Image, s.InitImage))
	lines = append(lines, "each figure is min / median / max over its runs; ratio = nodelet's median / kubelet's; "+
		"a figure whose two min..max ranges overlap is a tie")
	return lines
}

func describeBursts(s Settings) string {
	var parts []string
	for _, n := range s.Bursts {
		parts = append(parts, fmt.Sprintf("burst of %d ×%d", n, s.BurstRuns[n]))
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
	header := []string{"workload", "figure", "unit", "nodelet", "kubelet", "ratio", "verdict"}
	table := [][]string{header}
	for _, row := range rows {
		table = append(table, []string{row.Workload, row.Name, row.Unit,
			spread(row.Summaries["nodelet"]), spread(row.Summaries["kubelet"]), ratio(row.Ratio), string(row.Verdict)})
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
	fmt.Fprintln(w, "| workload | figure | unit | nodelet | kubelet | nodelet/kubelet | verdict |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- |")
	last := ""
	for _, row := range rows {
		workload := row.Workload
		if workload == last {
			workload = ""
		}
		last = row.Workload
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", workload, row.Name, row.Unit,
			spread(row.Summaries["nodelet"]), spread(row.Summaries["kubelet"]), ratio(row.Ratio), row.Verdict)
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
