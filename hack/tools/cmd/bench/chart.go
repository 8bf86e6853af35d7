package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// agentColors tell the two agents apart in every panel.
var agentColors = map[string]color.Color{
	"nodelet": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	"kubelet": color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
}

// group is one box per agent at one place on a panel's x axis.
type group struct {
	label  string
	values map[string][]float64
}

// panel is one plot of the chart: a box plot per agent and group, so each
// box shows the runs' spread (whiskers), quartiles and median.
type panel struct {
	title  string
	unit   string
	log    bool
	groups []group
}

// writeChart draws the latency distributions and the resource use into one
// PNG.
func writeChart(path string, results *Results) error {
	// A panel with nothing to show (a short run without bursts, say) is
	// left out: a plot needs at least one group.
	panels := slices.DeleteFunc(chartPanels(results), func(p panel) bool { return len(p.groups) == 0 })
	const cols = 3
	rows := (len(panels) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, p := range panels {
		drawn, err := p.plot()
		if err != nil {
			return fmt.Errorf("drawing %q: %w", p.title, err)
		}
		plots[i/cols][i%cols] = drawn
	}
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(cols)*6*vg.Inch, vg.Length(rows)*4.5*vg.Inch), vgimg.UseDPI(96))
	canvas := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 4, PadBottom: vg.Millimeter * 4, PadLeft: vg.Millimeter * 4, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, tiles, canvas)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the chart: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(file); err != nil {
		file.Close()
		return fmt.Errorf("writing the chart: %w", err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("writing the chart: %w", err)
	}
	return nil
}

func (p panel) plot() (*plot.Plot, error) {
	out := plot.New()
	out.Title.Text = p.title
	out.Y.Label.Text = p.unit
	if p.log {
		out.Y.Scale = plot.LogScale{}
		out.Y.Tick.Marker = logTicks{}
	}
	out.Legend.Top = true
	out.Legend.Left = true
	labels := make([]string, len(p.groups))
	legend := map[string]bool{}
	for i, g := range p.groups {
		labels[i] = g.label
		for j, name := range agentNames {
			values := g.values[name]
			if len(values) == 0 {
				continue
			}
			box, err := plotter.NewBoxPlot(vg.Points(18), float64(i)+0.22*float64(2*j-1), plotter.Values(values))
			if err != nil {
				return nil, err
			}
			box.FillColor = agentColors[name]
			box.MedianStyle.Width = vg.Points(2)
			out.Add(box)
			if !legend[name] {
				legend[name] = true
				out.Legend.Add(name, swatch{agentColors[name]})
			}
		}
	}
	out.NominalX(labels...)
	out.X.Min, out.X.Max = -0.6, float64(len(p.groups))-0.4
	// Room above the boxes for the legend.
	if p.log {
		out.Y.Min /= 1.5
		out.Y.Max *= 2.5
	} else {
		out.Y.Min = 0
		out.Y.Max *= 1.3
	}
	return out, nil
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten, labelled
// where there is room.
type logTicks struct{}

func (logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for decade := math.Pow(10, math.Floor(math.Log10(min))); decade <= max; decade *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := decade * m
			if v < min || v > max {
				continue
			}
			ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
	}
	return ticks
}

// chartPanels picks the chart's figures from the results.
func chartPanels(results *Results) []panel {
	per := func(value func(a *AgentResults) []float64) map[string][]float64 {
		values := map[string][]float64{}
		for _, name := range agentNames {
			if a := results.Agents[name]; a != nil {
				values[name] = value(a)
			}
		}
		return values
	}
	bursts := func(n int, value func(BurstRun) []float64) map[string][]float64 {
		return per(func(a *AgentResults) []float64 {
			var values []float64
			for _, b := range a.Bursts {
				if b.Pods == n && b.Workload == "" {
					values = append(values, value(b)...)
				}
			}
			return values
		})
	}
	one := func(f func(BurstRun) float64) func(BurstRun) []float64 {
		return func(b BurstRun) []float64 { return []float64{f(b)} }
	}

	latency := panel{title: "Start latency: create → Ready (per pod)", unit: "seconds (log)", log: true, groups: []group{
		{"CRI floor", per(func(a *AgentResults) []float64 {
			return collect(a.Floor, func(r FloorRun) float64 { return r.Seconds })
		})},
		{"one pod", per(func(a *AgentResults) []float64 {
			return collect(a.Single, func(r PodRun) float64 { return r.ReadySeconds })
		})},
		{"init", per(func(a *AgentResults) []float64 {
			return collect(a.Init, func(r PodRun) float64 { return r.ReadySeconds })
		})},
	}}
	deletion := panel{title: "Deletion: delete → gone", unit: "seconds", groups: []group{
		{"one pod", per(func(a *AgentResults) []float64 {
			return collect(a.Single, func(r PodRun) float64 { return r.GoneSeconds })
		})},
	}}
	cpu := panel{title: "Agent CPU", unit: "CPU-seconds"}
	rss := panel{title: "Agent peak RSS", unit: "MiB"}
	requests := panel{title: "API requests per pod (create → gone)", unit: "requests", groups: []group{
		{"one pod", per(func(a *AgentResults) []float64 {
			return collect(a.Single, func(r PodRun) float64 { return requestTotal(r.Requests) })
		})},
	}}
	for _, n := range results.Settings.Bursts {
		label := fmt.Sprintf("burst %d", n)
		latency.groups = append(latency.groups, group{label, bursts(n, func(b BurstRun) []float64 { return b.ReadySeconds })})
		deletion.groups = append(deletion.groups, group{label + ": all", bursts(n, one(func(b BurstRun) float64 { return b.AllGoneSeconds }))})
		cpu.groups = append(cpu.groups, group{label, bursts(n, one(func(b BurstRun) float64 { return b.Agent.CPUSeconds }))})
		rss.groups = append(rss.groups, group{label, bursts(n, one(func(b BurstRun) float64 { return float64(b.Agent.PeakRSSBytes) / mib }))})
		requests.groups = append(requests.groups, group{label, bursts(n, one(func(b BurstRun) float64 { return requestTotal(b.Requests) / float64(b.Pods) }))})
	}
	panels := []panel{latency, deletion, requests, cpu, rss}
	if results.Settings.IdleRuns > 0 {
		label := fmt.Sprintf("%d idle, %s", results.Settings.IdlePods, results.Settings.IdleFor)
		cpu.groups = append(cpu.groups, group{label, per(func(a *AgentResults) []float64 {
			return collect(a.Idle, func(r IdleRun) float64 { return r.Agent.CPUSeconds })
		})})
		rss.groups = append(rss.groups, group{label, per(func(a *AgentResults) []float64 {
			return collect(a.Idle, func(r IdleRun) float64 { return float64(r.Agent.PeakRSSBytes) / mib })
		})})
		cri := panel{title: "CRI calls containerd served", unit: "calls per second", groups: []group{
			{label, per(func(a *AgentResults) []float64 {
				return collect(a.Idle, func(r IdleRun) float64 { return r.CRICalls / r.Seconds })
			})},
		}}
		panels = []panel{latency, deletion, requests, cpu, rss, cri}
	}
	return panels
}

// swatch is a legend entry: a square of the agent's colour.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.color, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}
