package eviction

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func TestNodeFsShare(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	disk := func(available string) Observation {
		return Observation{Available: resource.MustParse(available), Capacity: resource.MustParse("500Gi"), Time: now}
	}
	tests := map[string]struct {
		fs        Observation
		used      string
		wantAvail string
	}{
		"the share less the pods' use":                  {fs: disk("300Gi"), used: "6Gi", wantAvail: "14Gi"},
		"no more than the file system has free":         {fs: disk("4Gi"), used: "6Gi", wantAvail: "4Gi"},
		"nothing left when the pods use over the share": {fs: disk("300Gi"), used: "25Gi", wantAvail: "0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := NodeFsShare(tc.fs, 20<<30, resource.MustParse(tc.used))
			if got.Available.Cmp(resource.MustParse(tc.wantAvail)) != 0 || got.Capacity.Cmp(resource.MustParse("20Gi")) != 0 || !got.Time.Equal(now) {
				t.Errorf("NodeFsShare() = available %s, capacity %s, at %v; want %s of the share's 20Gi, at %v",
					got.Available.String(), got.Capacity.String(), got.Time, tc.wantAvail, now)
			}
		})
	}
}

func TestNodeFsShareThresholdIsOfTheShare(t *testing.T) {
	// 10% of a 20Gi share is 2Gi: 1Gi left meets it, whatever the disk's size.
	obs := Observations{SignalNodeFsAvailable: NodeFsShare(Observation{Available: resource.MustParse("300Gi"), Capacity: resource.MustParse("500Gi")}, 20<<30, resource.MustParse("19Gi"))}
	threshold := Threshold{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.1}}
	if met := ThresholdsMet([]Threshold{threshold}, obs, false); len(met) != 1 {
		t.Errorf("ThresholdsMet(nodefs.available<10%%) with 1Gi of a 20Gi share left = %v, want it met", met)
	}
}

func TestPodsEphemeralStorage(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	usage := Usage{types.UID("a"): {EphemeralStorage: q("1Gi")}, types.UID("b"): {EphemeralStorage: q("512Mi")}, types.UID("c"): {}}
	if got := PodsEphemeralStorage(usage); got.Cmp(resource.MustParse("1536Mi")) != 0 {
		t.Errorf("PodsEphemeralStorage() = %s, want 1536Mi", got.String())
	}
}

func TestPIDShare(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct{ max, current, want int64 }{{4096, 96, 4000}, {4096, 5000, 0}} {
		got := PIDShare(tc.max, tc.current, now)
		if got.Available.Value() != tc.want || got.Capacity.Value() != tc.max {
			t.Errorf("PIDShare(%d, %d) = %s of %s, want %d of %d", tc.max, tc.current, got.Available.String(), got.Capacity.String(), tc.want, tc.max)
		}
	}
}
