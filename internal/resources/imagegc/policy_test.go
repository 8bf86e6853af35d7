package imagegc

// Pure tests: the policy's decisions over plain values.

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

func ids(images []Image) []string {
	var out []string
	for _, image := range images {
		out = append(out, image.ID)
	}
	return out
}

func TestDecide(t *testing.T) {
	now := t0.Add(time.Hour)
	old := func(id string, size int64, lastUsed time.Duration) Image {
		// Detected at t0, last used lastUsed after it (0: never).
		image := Image{ID: id, Size: size, FirstDetected: t0}
		if lastUsed > 0 {
			image.LastUsed = t0.Add(lastUsed)
		}
		return image
	}
	policy := Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
	full := FsUsage{CapacityBytes: 1000, AvailableBytes: 100} // 90% used
	for _, tc := range []struct {
		name        string
		policy      Policy
		images      []Image
		fs          FsUsage
		began       time.Time
		wantByAge   []string
		wantRemoved []string
		wantAmount  int64
		wantUsage   int
		wantErr     error
	}{
		{
			name:      "under the high threshold nothing goes",
			policy:    policy,
			images:    []Image{old("a", 100, 0)},
			fs:        FsUsage{CapacityBytes: 1000, AvailableBytes: 200},
			wantUsage: 80,
		},
		{
			name:   "over it, least recently used first, never-used first of all, down to the low threshold",
			policy: policy,
			images: []Image{
				old("used-recently", 60, 50*time.Minute),
				old("used-long-ago", 60, 10*time.Minute),
				old("never-used", 50, 0),
			},
			fs:          full,
			wantUsage:   90,
			wantAmount:  100, // to 80%: 200 available
			wantRemoved: []string{"never-used", "used-long-ago"},
		},
		{
			name:   "in use, pinned (or the sandbox image) and younger than the minimum age stay",
			policy: policy,
			images: []Image{
				{ID: "in-use", Size: 500, FirstDetected: t0, LastUsed: now, InUse: true},
				{ID: "pinned", Size: 500, FirstDetected: t0, Pinned: true},
				{ID: "new", Size: 500, FirstDetected: now.Add(-time.Minute)},
				old("unused", 10, 0),
			},
			fs:          full,
			wantUsage:   90,
			wantAmount:  100,
			wantRemoved: []string{"unused"},
		},
		{
			name:   "an image used at this very instant stays",
			policy: policy,
			images: []Image{
				{ID: "just-used", Size: 500, FirstDetected: t0, LastUsed: now},
			},
			fs:         full,
			wantUsage:  90,
			wantAmount: 100,
		},
		{
			name:        "ties in last use go by first detection",
			policy:      policy,
			images:      []Image{{ID: "later", Size: 100, FirstDetected: t0.Add(time.Minute)}, {ID: "earlier", Size: 100, FirstDetected: t0}},
			fs:          full,
			wantUsage:   90,
			wantAmount:  100,
			wantRemoved: []string{"earlier"},
		},
		{
			name:        "thresholds that force collection remove every unused image",
			policy:      Policy{HighThresholdPercent: 1, LowThresholdPercent: 0},
			images:      []Image{{ID: "a", Size: 10, FirstDetected: now}, {ID: "b", Size: 10, FirstDetected: now}},
			fs:          FsUsage{CapacityBytes: 1000, AvailableBytes: 900},
			wantUsage:   10,
			wantAmount:  100,
			wantRemoved: []string{"a", "b"},
		},
		{
			name:       "past the maximum age images go whatever the usage",
			policy:     Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 30 * time.Minute},
			images:     []Image{old("stale", 10, 20*time.Minute), old("fresh", 10, 40*time.Minute), old("never", 10, 0)},
			fs:         FsUsage{CapacityBytes: 1000, AvailableBytes: 900},
			began:      t0,
			wantByAge:  []string{"never", "stale"},
			wantUsage:  10,
			wantAmount: 0,
		},
		{
			name:      "the maximum age waits until the collector has run that long",
			policy:    Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 30 * time.Minute},
			images:    []Image{old("stale", 10, 20*time.Minute)},
			fs:        FsUsage{CapacityBytes: 1000, AvailableBytes: 900},
			began:     now.Add(-10 * time.Minute),
			wantUsage: 10,
		},
		{
			name:    "no capacity is an error",
			policy:  policy,
			fs:      FsUsage{},
			wantErr: ErrInvalidCapacity,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := tc.began
			if began.IsZero() {
				began = now
			}
			plan, err := tc.policy.Decide(tc.images, tc.fs, now, began)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantByAge, ids(plan.ByAge)); diff != "" {
				t.Errorf("by age (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRemoved, ids(plan.Removals())); diff != "" {
				t.Errorf("removed for space (-want +got):\n%s", diff)
			}
			if plan.AmountToFree != tc.wantAmount || plan.UsagePercent != tc.wantUsage {
				t.Errorf("usage %d%%, amount to free %d; want %d%%, %d", plan.UsagePercent, plan.AmountToFree, tc.wantUsage, tc.wantAmount)
			}
		})
	}
}

func TestDisabled(t *testing.T) {
	if !(Policy{HighThresholdPercent: 100}).Disabled() {
		t.Error("a high threshold of 100 without a maximum age does not turn collection off")
	}
	if (Policy{HighThresholdPercent: 100, MaxAge: time.Hour}).Disabled() {
		t.Error("a maximum age with a high threshold of 100 turns collection off")
	}
}

func TestFreeDiskSpaceFailedMessage(t *testing.T) {
	got := FreeDiskSpaceFailedMessage(92, 20<<30, 1234)
	want := "Insufficient free disk space on the node's image filesystem (92% of 20.0 GiB used). Failed to free sufficient space by deleting unused images (freed 1234 bytes). Investigate disk usage, as it could be used by active images, logs, volumes, or other data."
	if got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
}
