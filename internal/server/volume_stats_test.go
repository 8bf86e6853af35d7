package server

// Tests of the volume stats in /stats/summary, with the CRI fake of
// stats_test.go and a stand-in for the volume manager.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// fakeVolumes measures nothing: it gives what it holds and counts calls.
type fakeVolumes struct {
	stats map[types.UID][]statsapi.VolumeStats
	calls int
}

func (v *fakeVolumes) PodVolumeStats(context.Context) map[types.UID][]statsapi.VolumeStats {
	v.calls++
	return v.stats
}

func TestStatsSummaryHasEachPodsVolumes(t *testing.T) {
	clk := clocktesting.NewFakeClock(statsT0.Add(10 * time.Second))
	scratch := statsapi.VolumeStats{
		FsStats: statsapi.FsStats{Time: metav1.NewTime(statsT0), UsedBytes: ptr.To[uint64](10 << 20), CapacityBytes: ptr.To[uint64](1 << 30),
			AvailableBytes: ptr.To[uint64](1 << 29), Inodes: ptr.To[uint64](100), InodesFree: ptr.To[uint64](90), InodesUsed: ptr.To[uint64](2)},
		Name: "scratch",
	}
	data := scratch
	data.Name, data.PVCRef = "data", &statsapi.PVCReference{Name: "data-web-0", Namespace: "ns"}
	volumes := &fakeVolumes{stats: map[types.UID][]statsapi.VolumeStats{
		"uid-web":   {scratch, data},
		"uid-other": {scratch}, // a pod the runtime does not run: not in the summary
	}}
	s := &Server{stats: newTestStatsProvider(statsRuntime(), clk)}
	s.stats.volumes = volumes

	rec := httptest.NewRecorder()
	s.serveStatsSummary(rec, httptest.NewRequest(http.MethodGet, "/stats/summary", nil))

	var summary statsapi.Summary
	if err := json.Unmarshal(rec.Body.Bytes(), &summary); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("/stats/summary: %d %v", rec.Code, err)
	}
	if len(summary.Pods) != 1 {
		t.Fatalf("pods %+v, want web alone", summary.Pods)
	}
	if diff := cmp.Diff([]statsapi.VolumeStats{scratch, data}, summary.Pods[0].VolumeStats); diff != "" {
		t.Errorf("web's volume stats (-want +got):\n%s", diff)
	}

	// The summary behind the resource metrics, which metrics-server
	// scrapes often, measures no volumes.
	calls := volumes.calls
	if _, err := (&resourceCollector{stats: s.stats}).stats.summary(t.Context()); err != nil {
		t.Fatal(err)
	}
	if volumes.calls != calls {
		t.Errorf("the resource metrics' summary measured volumes")
	}
}
