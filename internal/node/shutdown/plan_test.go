package shutdown

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestBands(t *testing.T) {
	tests := map[string]struct {
		total, critical time.Duration
		byPriority      []Band
		want            []Band
	}{
		"off":                               {},
		"a critical part longer than all":   {total: 10 * time.Second, critical: 20 * time.Second},
		"the whole period for regular pods": {total: 30 * time.Second, want: []Band{{Priority: 0, ShutdownGracePeriodSeconds: 30}, {Priority: 2000000000, ShutdownGracePeriodSeconds: 0}}},
		"two bands": {
			total: 30 * time.Second, critical: 10 * time.Second,
			want: []Band{{Priority: 0, ShutdownGracePeriodSeconds: 20}, {Priority: 2000000000, ShutdownGracePeriodSeconds: 10}},
		},
		"bands by priority, sorted": {
			byPriority: []Band{{Priority: 100000, ShutdownGracePeriodSeconds: 5}, {Priority: 0, ShutdownGracePeriodSeconds: 10}},
			want:       []Band{{Priority: 0, ShutdownGracePeriodSeconds: 10}, {Priority: 100000, ShutdownGracePeriodSeconds: 5}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Bands(tc.total, tc.critical, tc.byPriority)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Bands (-want +got):\n%s", diff)
			}
		})
	}
	if got := PeriodRequested(Bands(30*time.Second, 10*time.Second, nil)); got != 30*time.Second {
		t.Errorf("PeriodRequested = %v, want 30s", got)
	}
}

func podOf(name string, priority *int32, grace *int64) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Priority: priority, TerminationGracePeriodSeconds: grace},
	}
}

func TestGroupByPriority(t *testing.T) {
	bands := []Band{{Priority: 1, ShutdownGracePeriodSeconds: 10}, {Priority: 100, ShutdownGracePeriodSeconds: 5}, {Priority: 100, ShutdownGracePeriodSeconds: 3}, {Priority: 1000, ShutdownGracePeriodSeconds: 1}}
	pods := []*corev1.Pod{
		podOf("no-priority", nil, nil),
		podOf("below-every-band", ptr.To[int32](-5), nil),
		podOf("first", ptr.To[int32](1), nil),
		podOf("between", ptr.To[int32](99), nil),
		podOf("at-a-shared-priority", ptr.To[int32](100), nil),
		podOf("above-every-band", ptr.To[int32](2000000000), nil),
	}
	names := func(groups []Group) [][]string {
		var out [][]string
		for _, g := range groups {
			var n []string
			for _, p := range g.Pods {
				n = append(n, p.Name)
			}
			out = append(out, n)
		}
		return out
	}
	want := [][]string{{"no-priority", "below-every-band", "first", "between"}, {"at-a-shared-priority"}, nil, {"above-every-band"}}
	if diff := cmp.Diff(want, names(GroupByPriority(bands, pods))); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if got := GroupByPriority(nil, pods); got != nil {
		t.Errorf("without bands: %v, want none", got)
	}
}

func TestGracePeriod(t *testing.T) {
	band := Band{ShutdownGracePeriodSeconds: 10}
	for _, tc := range []struct {
		pod  *int64
		want int64
	}{{nil, 10}, {ptr.To[int64](3), 3}, {ptr.To[int64](10), 10}, {ptr.To[int64](30), 10}} {
		if got := GracePeriod(podOf("p", nil, tc.pod), band); got != tc.want {
			t.Errorf("pod grace %v in a band of 10s: %d, want %d", tc.pod, got, tc.want)
		}
	}
}
