package eviction

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pure tests: the statements are parsed as the kubelet parses them.

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

func TestParseThresholdConfig(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		enforce                       []string
		hard, soft, grace, minReclaim map[string]string
		want                          []Threshold
		wantErr                       string
	}{
		{
			name: "no statements, no thresholds",
		},
		{
			name: "the kubelet's defaults, ordered by signal",
			hard: DefaultEvictionHard(),
			want: []Threshold{
				{Signal: SignalImageFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.15}},
				{Signal: SignalImageFsInodesFree, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.05}},
				{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("100Mi")}},
				{Signal: SignalNodeFsAvailable, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.1}},
				{Signal: SignalNodeFsInodesFree, Operator: OpLessThan, Value: ThresholdValue{Percentage: 0.05}},
			},
		},
		{
			name: "0% and 100% are no threshold",
			hard: map[string]string{"nodefs.available": "0%", "imagefs.available": "100%"},
		},
		{
			name:    "pods enforcement copies the hard memory threshold to allocatable memory",
			enforce: []string{"pods"},
			hard:    map[string]string{"memory.available": "1Gi"},
			want: []Threshold{
				{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("1Gi")}},
				{Signal: SignalAllocatableMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("1Gi")}},
			},
		},
		{
			name:       "soft thresholds take their grace period, and minimum reclaims attach",
			soft:       map[string]string{"memory.available": "2Gi"},
			grace:      map[string]string{"memory.available": "30s"},
			minReclaim: map[string]string{"memory.available": "5%"},
			want: []Threshold{
				{Signal: SignalMemoryAvailable, Operator: OpLessThan, Value: ThresholdValue{Quantity: quantity("2Gi")}, GracePeriod: 30 * time.Second, MinReclaim: &ThresholdValue{Percentage: 0.05}},
			},
		},
		{name: "unknown signal", hard: map[string]string{"memory.free": "1Gi"}, wantErr: "unsupported eviction signal memory.free"},
		{name: "zero quantity", hard: map[string]string{"memory.available": "0"}, wantErr: "eviction threshold memory.available must be positive: 0"},
		{name: "negative quantity", hard: map[string]string{"memory.available": "-1Gi"}, wantErr: "must be positive"},
		{name: "percentage over 100", hard: map[string]string{"nodefs.available": "150%"}, wantErr: "eviction percentage threshold nodefs.available must be <= 100%: 150%"},
		{name: "negative percentage", hard: map[string]string{"nodefs.available": "-5%"}, wantErr: "must be >= 0%"},
		{name: "not a quantity", hard: map[string]string{"memory.available": "lots"}, wantErr: "quantities must match"},
		{name: "soft without grace period", soft: map[string]string{"memory.available": "1Gi"}, wantErr: "grace period must be specified for the soft eviction threshold memory.available"},
		{name: "negative grace period", soft: map[string]string{"memory.available": "1Gi"}, grace: map[string]string{"memory.available": "-1s"}, wantErr: "must be a positive value"},
		{name: "zero minimum reclaim percentage", minReclaim: map[string]string{"memory.available": "0%"}, wantErr: "minimum reclaim memory.available must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseThresholdConfig(tc.enforce, tc.hard, tc.soft, tc.grace, tc.minReclaim)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("thresholds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHardEvictionReservation(t *testing.T) {
	capacity := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	for _, tc := range []struct {
		name string
		hard map[string]string
		soft bool
		want corev1.ResourceList
	}{
		{
			// The percentage is a float32, as the kubelet's: 10% of
			// 100Gi is a little over 10Gi, as it is there.
			name: "memory and nodefs are reserved, percentages of capacity; image fs and inodes are not",
			hard: DefaultEvictionHard(),
			want: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi"), corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(float64(100<<30)*float64(float32(0.1))), resource.BinarySI)},
		},
		{
			name: "a memory percentage",
			hard: map[string]string{"memory.available": "50%"},
			want: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
		},
		{
			name: "soft thresholds reserve nothing",
			hard: map[string]string{"memory.available": "1Gi"},
			soft: true,
			want: corev1.ResourceList{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var thresholds []Threshold
			var err error
			if tc.soft {
				thresholds, err = ParseThresholdConfig(nil, nil, tc.hard, map[string]string{"memory.available": "1m"}, nil)
			} else {
				thresholds, err = ParseThresholdConfig(nil, tc.hard, nil, nil, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := HardEvictionReservation(thresholds, capacity)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("reservation (-want +got):\n%s", diff)
			}
		})
	}
}
