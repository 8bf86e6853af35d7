package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

func runScaleReport(args []string) error {
	var ins agentFlag
	var outDir string
	flags := flag.NewFlagSet("scale-report", flag.ExitOnError)
	flags.Var(&ins, "in", "a `bench scale` result (give nodelet's and kubelet's)")
	flags.StringVar(&outDir, "out-dir", "", "folder for scale.txt (default: print only)")
	_ = flags.Parse(args)
	byAgent := map[string]*ScaleResult{}
	for _, path := range ins {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var result ScaleResult
		if err := json.Unmarshal(data, &result); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		byAgent[result.Agent] = &result
	}
	nodelet, kubelet := byAgent["nodelet"], byAgent["kubelet"]
	if nodelet == nil || kubelet == nil {
		return errors.New("scale-report: want one nodelet and one kubelet result")
	}
	var out strings.Builder
	writeScaleReport(&out, nodelet, kubelet)
	fmt.Print(out.String())
	if outDir == "" {
		return nil
	}
	return os.WriteFile(filepath.Join(outDir, "scale.txt"), []byte(out.String()), 0o644)
}

// perNode is the figures of one run divided by its nodes (and pods).
type perNode struct {
	r *ScaleResult
}

func (p perNode) n() float64 { return float64(p.r.Nodes) }

func (p perNode) pods() float64 { return float64(p.r.Nodes * p.r.PodsPerNode) }

// perMinute is a window's count per node per minute.
func (p perNode) perMinute(count float64, w scaleWindow) float64 {
	if w.Seconds == 0 {
		return 0
	}
	return count / p.n() / (w.Seconds / 60)
}

// milliCores is a process's CPU in a window above the baseline's rate, per
// node, in thousandths of a CPU.
func (p perNode) milliCores(cpu, baseline float64, w scaleWindow) float64 {
	rate := cpu / w.Seconds
	base := baseline / p.r.Baseline.Seconds
	return (rate - base) * 1000 / p.n()
}

func (p perNode) watches() float64 {
	var total float64
	for _, n := range p.r.Watches {
		total += n
	}
	return total / p.n()
}

type scaleRow struct {
	figure, unit     string
	nodelet, kubelet float64
}

func scaleRows(nodelet, kubelet *ScaleResult) []scaleRow {
	rows := []scaleRow{}
	add := func(figure, unit string, f func(p perNode) float64) {
		rows = append(rows, scaleRow{figure, unit, f(perNode{nodelet}), f(perNode{kubelet})})
	}
	add("nodes started → all Ready", "s", func(p perNode) float64 { return p.r.NodesReadySeconds })
	add("idle: API requests", "/node/min", func(p perNode) float64 { return p.perMinute(float64(p.r.Idle.Requests.Total), p.r.Idle) })
	add("idle: watches held", "/node", perNode.watches)
	add("idle: bytes received", "KiB/node/min", func(p perNode) float64 { return p.perMinute(float64(p.r.Idle.BytesReceived), p.r.Idle) / 1024 })
	add("idle: bytes sent", "KiB/node/min", func(p perNode) float64 { return p.perMinute(float64(p.r.Idle.BytesSent), p.r.Idle) / 1024 })
	add("idle: API server CPU above baseline", "mCPU/node", func(p perNode) float64 {
		return p.milliCores(p.r.Idle.APIServerCPUSeconds, p.r.Baseline.APIServerCPUSeconds, p.r.Idle)
	})
	add("idle: etcd CPU above baseline", "mCPU/node", func(p perNode) float64 {
		return p.milliCores(p.r.Idle.EtcdCPUSeconds, p.r.Baseline.EtcdCPUSeconds, p.r.Idle)
	})
	add("idle: agent CPU", "mCPU/node", func(p perNode) float64 { return p.r.Idle.AgentCPUSeconds / p.r.Idle.Seconds * 1000 / p.n() })
	add("idle: agent RSS", "MiB/node", func(p perNode) float64 { return float64(p.r.AgentRSSIdleBytes) / p.n() / (1 << 20) })
	add("burst: create → all pods Running", "s", func(p perNode) float64 { return p.r.RunningSeconds })
	add("burst: scale to 0 → all pods gone", "s", func(p perNode) float64 { return p.r.GoneSeconds })
	add("churn: API requests", "/node/min", func(p perNode) float64 { return p.perMinute(float64(p.r.Churn.Requests.Total), p.r.Churn) })
	add("churn: API requests", "/pod", func(p perNode) float64 { return float64(p.r.Churn.Requests.Total) / p.pods() })
	add("churn: API requests but events", "/pod", func(p perNode) float64 {
		return float64(p.r.Churn.Requests.Total-eventRequests(p.r.Churn.Requests)) / p.pods()
	})
	add("churn: bytes received", "KiB/pod", func(p perNode) float64 { return float64(p.r.Churn.BytesReceived) / p.pods() / 1024 })
	add("churn: bytes sent", "KiB/pod", func(p perNode) float64 { return float64(p.r.Churn.BytesSent) / p.pods() / 1024 })
	add("churn: API server CPU", "CPU-ms/pod", func(p perNode) float64 { return p.r.Churn.APIServerCPUSeconds * 1000 / p.pods() })
	add("churn: etcd CPU", "CPU-ms/pod", func(p perNode) float64 { return p.r.Churn.EtcdCPUSeconds * 1000 / p.pods() })
	add("churn: agent CPU", "CPU-ms/pod", func(p perNode) float64 { return p.r.Churn.AgentCPUSeconds * 1000 / p.pods() })
	add("burst: agent RSS, all Running", "MiB/node", func(p perNode) float64 { return float64(p.r.AgentRSSRunningBytes) / p.n() / (1 << 20) })
	return rows
}

func writeScaleReport(w io.Writer, nodelet, kubelet *ScaleResult) {
	fmt.Fprintf(w, "%s, %d hollow nodes per agent, a burst of %d pods (%d per node) as one Deployment\n",
		nodelet.Started.UTC().Format("2006-01-02, 15:04 UTC"), nodelet.Nodes, nodelet.Nodes*nodelet.PodsPerNode, nodelet.PodsPerNode)
	m := nodelet.Machine
	fmt.Fprintf(w, "machine: %s, %d CPUs (%s), %.0f GiB, kernel %s\n", m.OS, m.CPUs, m.CPUModel, float64(m.MemoryBytes)/(1<<30), m.Kernel)
	for _, r := range []*ScaleResult{nodelet, kubelet} {
		fmt.Fprintf(w, "%s %s: %d nodes in %d process(es); 1-minute load average %.2f at the start, %.2f at the end; windows: baseline %s, idle %s, churn %s\n",
			r.Agent, r.Version, r.Nodes, r.AgentProcesses, r.LoadStart, r.LoadEnd,
			seconds(r.Baseline.Seconds), seconds(r.Idle.Seconds), seconds(r.Churn.Seconds))
	}
	fmt.Fprintln(w, "per node = the run's total / its nodes; CPU above baseline = the process's rate in the window less its rate with the control plane alone; ratio = nodelet / kubelet")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tunit\tnodelet\tkubelet\tratio")
	for _, row := range scaleRows(nodelet, kubelet) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.figure, row.unit, num(row.nodelet), num(row.kubelet), scaleRatio(row.nodelet, row.kubelet))
	}
	_ = tw.Flush()

	for _, part := range []struct {
		title string
		unit  string
		value func(r *ScaleResult, n int) float64
	}{
		{"idle: API requests per node per minute, by request", "/node/min", func(r *ScaleResult, n int) float64 {
			return perNode{r}.perMinute(float64(n), r.Idle)
		}},
		{"churn: API requests per pod, by request", "/pod", func(r *ScaleResult, n int) float64 {
			return float64(n) / perNode{r}.pods()
		}},
	} {
		fmt.Fprintf(w, "\n%s\n", part.title)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "request\tunit\tnodelet\tkubelet")
		counts := func(r *ScaleResult) map[string]int {
			if strings.HasPrefix(part.title, "idle") {
				return r.Idle.Requests.ByKey
			}
			return r.Churn.Requests.ByKey
		}
		for _, key := range unionKeys(counts(nodelet), counts(kubelet)) {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", key, part.unit,
				num(part.value(nodelet, counts(nodelet)[key])), num(part.value(kubelet, counts(kubelet)[key])))
		}
		_ = tw.Flush()
	}
	fmt.Fprintln(w, "\nwatches held per node at the end of the idle window, by resource")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "resource\tnodelet\tkubelet")
	floats := func(m map[string]float64) map[string]int {
		out := map[string]int{}
		for k, v := range m {
			out[k] = int(v)
		}
		return out
	}
	for _, key := range unionKeys(floats(nodelet.Watches), floats(kubelet.Watches)) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", key, num(nodelet.Watches[key]/float64(nodelet.Nodes)), num(kubelet.Watches[key]/float64(kubelet.Nodes)))
	}
	_ = tw.Flush()
}

// eventRequests counts the requests on events: kubemark's hollow kubelet
// records none (its recorder is a fake), a real kubelet does.
func eventRequests(c *requestCounts) int {
	n := 0
	for key, count := range c.ByKey {
		if strings.HasSuffix(key, " events") {
			n += count
		}
	}
	return n
}

// unionKeys is both maps' keys, the largest total first.
func unionKeys(a, b map[string]int) []string {
	keys := map[string]int{}
	for k, v := range a {
		keys[k] += v
	}
	for k, v := range b {
		keys[k] += v
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if keys[out[i]] != keys[out[j]] {
			return keys[out[i]] > keys[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// num prints three significant digits.
func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10 || v <= -10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1 || v <= -1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func scaleRatio(a, b float64) string {
	if b <= 0 || a < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func seconds(s float64) string { return (time.Duration(s) * time.Second).String() }
