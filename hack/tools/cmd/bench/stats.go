package main

import (
	"math"
	"sort"
)

// Summary is one figure over a fixed number of runs: its spread and its
// median. Every figure the bench reports is one.
type Summary struct {
	Runs   int     `json:"runs"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Summarize returns the min, median and max of values; a Summary with no
// runs when there are none.
func Summarize(values []float64) Summary {
	if len(values) == 0 {
		return Summary{}
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	return Summary{
		Runs:   len(sorted),
		Min:    sorted[0],
		Median: Percentile(sorted, 50),
		Max:    sorted[len(sorted)-1],
	}
}

// Percentile returns the p-th percentile (0..100) of values by linear
// interpolation between the closest ranks, as numpy's default does: p50 of
// an even count is the mean of the middle two, p99 of 30 values lies between
// the two largest. NaN when there are no values.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	sorted := values
	if !sort.Float64sAreSorted(values) {
		sorted = append([]float64(nil), values...)
		sort.Float64s(sorted)
	}
	rank := p / 100 * float64(len(sorted)-1)
	lower := int(math.Floor(rank))
	upper := int(math.Ceil(rank))
	if lower < 0 {
		return sorted[0]
	}
	if upper >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lower] + (rank-float64(lower))*(sorted[upper]-sorted[lower])
}

// Verdict says which agent a figure favours; lower is better for every
// figure the bench reports (seconds, bytes, requests, calls).
type Verdict string

const (
	VerdictNodelet Verdict = "nodelet"
	VerdictKubelet Verdict = "kubelet"
	// VerdictTie is a difference smaller than the spread: the two ranges
	// of runs overlap.
	VerdictTie Verdict = "tie"
	// VerdictNone is a figure one side has no runs for.
	VerdictNone Verdict = "n/a"
)

// Compare decides a figure: the side whose worst run is still better than
// the other side's best run wins; when the min..max ranges overlap, the
// difference of the medians is within the spread and it is a tie.
func Compare(nodelet, kubelet Summary) Verdict {
	switch {
	case nodelet.Runs == 0 || kubelet.Runs == 0:
		return VerdictNone
	case nodelet.Max < kubelet.Min:
		return VerdictNodelet
	case kubelet.Max < nodelet.Min:
		return VerdictKubelet
	default:
		return VerdictTie
	}
}

// Ratio is nodelet's median over the kubelet's; NaN when it means nothing.
func Ratio(nodelet, kubelet Summary) float64 {
	if nodelet.Runs == 0 || kubelet.Runs == 0 || kubelet.Median == 0 {
		return math.NaN()
	}
	return nodelet.Median / kubelet.Median
}
