package eviction

// Pure tests: the root cgroup's files as values.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

func TestParseMemoryStat(t *testing.T) {
	got, err := ParseMemoryStat([]byte("cache 4096\nrss 8192\ntotal_inactive_file 1024\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]uint64{"cache": 4096, "rss": 8192, "total_inactive_file": 1024}, got); diff != "" {
		t.Errorf("ParseMemoryStat() (-want +got):\n%s", diff)
	}
	if _, err := ParseMemoryStat([]byte("anon -1\n")); err == nil {
		t.Errorf("a negative value was taken")
	}
}

func TestRootWorkingSet(t *testing.T) {
	for name, tc := range map[string]struct {
		root RootMemory
		want uint64
	}{
		"v1: usage_in_bytes less total_inactive_file": {
			root: RootMemory{Usage: ptr.To[uint64](3 << 30), Stat: map[string]uint64{"total_inactive_file": 1 << 30, "inactive_file": 5 << 20}},
			want: 2 << 30,
		},
		"v1: more inactive than used is none": {
			root: RootMemory{Usage: ptr.To[uint64](1 << 20), Stat: map[string]uint64{"total_inactive_file": 2 << 20}},
			want: 0,
		},
		"v2 top of the hierarchy, no memory.current: anon + file less inactive_file": {
			root: RootMemory{Unified: true, Stat: map[string]uint64{"anon": 1 << 30, "file": 2 << 30, "inactive_file": 1536 << 20}},
			want: 1536 << 20,
		},
		"v2 with memory.current (a namespaced root): it, less inactive_file": {
			root: RootMemory{Unified: true, Usage: ptr.To[uint64](700 << 20), Stat: map[string]uint64{"anon": 1 << 30, "inactive_file": 200 << 20}},
			want: 500 << 20,
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.root.WorkingSet(); got != tc.want {
				t.Errorf("WorkingSet() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMemoryAvailable(t *testing.T) {
	now := time.Unix(10, 0)
	got := MemoryAvailable(4<<30, 3<<30, now)
	if got.Available.Value() != 1<<30 || got.Capacity.Value() != 4<<30 || !got.Time.Equal(now) {
		t.Errorf("MemoryAvailable() = %s of %s at %v, want 1Gi of 4Gi", &got.Available, &got.Capacity, got.Time)
	}
	if got := MemoryAvailable(1<<30, 2<<30, now); got.Available.Value() != 0 {
		t.Errorf("a working set over capacity leaves %s, want 0", &got.Available)
	}
}
