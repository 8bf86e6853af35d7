package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// startedLine is what nodelet's "Pod started" log line holds: its start's
// steps, each as the time after the step before.
type startedLine struct {
	Msg string `json:"msg"`
	Pod struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"pod"`
	Steps string `json:"steps"`
	// Logged is when the line was written: just after its last step.
	Logged time.Time `json:"ts"`
}

// startSteps is one pod's start as its agent told it: seconds by step name
// (a container's step without the container's name, summed over
// containers), the steps in the order they came, and when it was told.
type startSteps struct {
	Steps  map[string]float64
	Order  []string
	Logged time.Time
}

// seenSinceRequest counts the first step (seen) from the bench's create
// request, sent at start, instead of from the pod's creation timestamp,
// which the API server keeps to the second, so that the steps add up to
// the start the bench measured: the line was written as the last step
// ended, and seen is what the other steps leave of the time from the
// request to the line.
func (s startSteps) seenSinceRequest(start time.Time) {
	if len(s.Order) == 0 || s.Order[0] != "seen" || s.Logged.IsZero() {
		return
	}
	rest := 0.0
	for _, step := range s.Order[1:] {
		rest += s.Steps[step]
	}
	if seen := s.Logged.Sub(start).Seconds() - rest; seen >= 0 {
		s.Steps["seen"] = seen
	}
}

// findStartSteps returns the steps of one pod's start from the end of an
// agent's JSON log; false when the log has no such line (yet).
func findStartSteps(log []byte, namespace, name string) (startSteps, bool, error) {
	lines := bytes.Split(log, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if !bytes.Contains(lines[i], []byte(`"Pod started"`)) {
			continue
		}
		var line startedLine
		if json.Unmarshal(lines[i], &line) != nil || line.Msg != "Pod started" ||
			line.Pod.Namespace != namespace || line.Pod.Name != name {
			continue
		}
		steps := map[string]float64{}
		var order []string
		for _, field := range strings.Fields(line.Steps) {
			step, took, ok := strings.Cut(field, "=")
			d, err := time.ParseDuration(took)
			if !ok || err != nil {
				return startSteps{}, false, fmt.Errorf("pod %s/%s: step %q of %q", namespace, name, field, line.Steps)
			}
			step, _, _ = strings.Cut(step, "/")
			if _, seen := steps[step]; !seen {
				order = append(order, step)
			}
			steps[step] += d.Seconds()
		}
		return startSteps{Steps: steps, Order: order, Logged: line.Logged}, true, nil
	}
	return startSteps{}, false, nil
}

// readLogTail reads at most the last limit bytes of a log file.
func readLogTail(path string, limit int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > limit {
		if _, err := file.Seek(info.Size()-limit, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(file)
}

// medianBreakdown is the median of each step over runs, the steps in the
// order they come in a start (their first appearance across runs); a step
// missing from a run counts as zero there.
func medianBreakdown(runs []PodRun) (steps []string, medians []float64) {
	seen := map[string]bool{}
	for _, run := range runs {
		for _, step := range run.StepOrder {
			if !seen[step] {
				seen[step] = true
				steps = append(steps, step)
			}
		}
	}
	for _, step := range steps {
		values := make([]float64, 0, len(runs))
		for _, run := range runs {
			if run.Steps != nil {
				values = append(values, run.Steps[step])
			}
		}
		sort.Float64s(values)
		medians = append(medians, Percentile(values, 50))
	}
	return steps, medians
}

// writeBreakdown prints the median start breakdown of each agent's single
// pods, for the agents whose logs tell one (nodelet's "Pod started").
func writeBreakdown(w io.Writer, results *Results, markdown bool) {
	for _, name := range []string{"nodelet", "kubelet"} {
		ar := results.Agents[name]
		if ar == nil {
			continue
		}
		steps, medians := medianBreakdown(ar.Single)
		if len(steps) == 0 {
			continue
		}
		total := 0.0
		for _, m := range medians {
			total += m
		}
		fmt.Fprintln(w)
		if markdown {
			fmt.Fprintf(w, "Where %s's single-pod start goes (median of each step over the runs, each after the step before):\n\n", name)
			fmt.Fprintln(w, "| step | s |")
			fmt.Fprintln(w, "| --- | --- |")
			for i, step := range steps {
				fmt.Fprintf(w, "| %s | %s |\n", step, number(medians[i]))
			}
			fmt.Fprintf(w, "| sum of the medians | %s |\n", number(total))
			continue
		}
		fmt.Fprintf(w, "where %s's single-pod start goes (median s per step, each after the step before):\n", name)
		for i, step := range steps {
			fmt.Fprintf(w, "  %-20s %s\n", step, number(medians[i]))
		}
		fmt.Fprintf(w, "  %-20s %s\n", "sum of the medians", number(total))
	}
}
