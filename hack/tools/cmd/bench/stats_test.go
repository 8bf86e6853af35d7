// Unit tests of the bench's figures: pure functions, nothing to run against.
package main

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	tests := map[string]struct {
		values []float64
		p      float64
		want   float64
	}{
		"the median of an odd count is the middle value":        {[]float64{3, 1, 2}, 50, 2},
		"the median of an even count is between the middle two": {[]float64{4, 1, 3, 2}, 50, 2.5},
		"p0 is the least":      {[]float64{5, 7, 6}, 0, 5},
		"p100 is the greatest": {[]float64{5, 7, 6}, 100, 7},
		"p90 of ten values interpolates between the 9th and 10th": {[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9.1},
		"p99 of one value is that value":                          {[]float64{0.4}, 99, 0.4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Percentile(tc.values, tc.p); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tc.values, tc.p, got, tc.want)
			}
		})
	}
	if got := Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("Percentile of nothing = %v, want NaN", got)
	}
}

func TestSummarizeLeavesItsInputAlone(t *testing.T) {
	values := []float64{0.5, 0.3, 0.9, 0.4}
	got := Summarize(values)
	want := Summary{Runs: 4, Min: 0.3, Median: 0.45, Max: 0.9}
	if math.Abs(got.Median-want.Median) > 1e-9 || got.Runs != want.Runs || got.Min != want.Min || got.Max != want.Max {
		t.Errorf("Summarize(%v) = %+v, want %+v", values, got, want)
	}
	if values[0] != 0.5 || values[1] != 0.3 {
		t.Errorf("Summarize sorted its input: %v", values)
	}
	if got := Summarize(nil); got.Runs != 0 {
		t.Errorf("Summarize(nil) = %+v, want no runs", got)
	}
}

func TestCompare(t *testing.T) {
	tests := map[string]struct {
		nodelet, kubelet Summary
		want             Verdict
	}{
		"nodelet's worst run beats the kubelet's best": {
			nodelet: Summary{Runs: 5, Min: 0.2, Median: 0.25, Max: 0.3},
			kubelet: Summary{Runs: 5, Min: 0.45, Median: 0.47, Max: 0.5},
			want:    VerdictNodelet,
		},
		"the kubelet's worst run beats nodelet's best": {
			nodelet: Summary{Runs: 5, Min: 0.6, Median: 0.7, Max: 0.8},
			kubelet: Summary{Runs: 5, Min: 0.45, Median: 0.47, Max: 0.5},
			want:    VerdictKubelet,
		},
		"medians apart but ranges overlapping is a tie": {
			nodelet: Summary{Runs: 5, Min: 0.2, Median: 0.3, Max: 0.46},
			kubelet: Summary{Runs: 5, Min: 0.45, Median: 0.47, Max: 0.5},
			want:    VerdictTie,
		},
		"one range inside the other is a tie": {
			nodelet: Summary{Runs: 3, Min: 1, Median: 2, Max: 9},
			kubelet: Summary{Runs: 3, Min: 3, Median: 4, Max: 5},
			want:    VerdictTie,
		},
		"equal single runs are a tie": {
			nodelet: Summary{Runs: 1, Min: 2, Median: 2, Max: 2},
			kubelet: Summary{Runs: 1, Min: 2, Median: 2, Max: 2},
			want:    VerdictTie,
		},
		"a side without runs decides nothing": {
			nodelet: Summary{},
			kubelet: Summary{Runs: 1, Min: 2, Median: 2, Max: 2},
			want:    VerdictNone,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Compare(tc.nodelet, tc.kubelet); got != tc.want {
				t.Errorf("Compare(%+v, %+v) = %s, want %s", tc.nodelet, tc.kubelet, got, tc.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	if got := Ratio(Summary{Runs: 1, Median: 1}, Summary{Runs: 1, Median: 4}); got != 0.25 {
		t.Errorf("Ratio = %v, want 0.25", got)
	}
	if got := Ratio(Summary{Runs: 1, Median: 1}, Summary{Runs: 1, Median: 0}); !math.IsNaN(got) {
		t.Errorf("Ratio over a zero median = %v, want NaN", got)
	}
}
