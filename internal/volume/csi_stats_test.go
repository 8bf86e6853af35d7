package volume

// Unit tests of CSI volume stats: the pure reading of a driver's answer,
// and the Manager asking the in-process fake node service (fakeCSINode)
// for a claim's and an inline volume's usage.

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// fakeCSIStats is what the fake's NodeGetVolumeStats answers, and the
// requests it got.
type fakeCSIStats struct {
	resp     *csipb.NodeGetVolumeStatsResponse
	err      error
	requests []*csipb.NodeGetVolumeStatsRequest
}

func (f *fakeCSINode) NodeGetVolumeStats(_ context.Context, req *csipb.NodeGetVolumeStatsRequest, _ ...grpc.CallOption) (*csipb.NodeGetVolumeStatsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.requests = append(f.stats.requests, req)
	return f.stats.resp, f.stats.err
}

func (f *fakeCSINode) statsRequests() []*csipb.NodeGetVolumeStatsRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats.requests
}

func csiStatsResponse(used int64, abnormal bool) *csipb.NodeGetVolumeStatsResponse {
	return &csipb.NodeGetVolumeStatsResponse{
		Usage: []*csipb.VolumeUsage{
			{Unit: csipb.VolumeUsage_BYTES, Total: 1000, Available: 1000 - used, Used: used},
			{Unit: csipb.VolumeUsage_INODES, Total: 50, Available: 45, Used: 5},
		},
		VolumeCondition: &csipb.VolumeCondition{Abnormal: abnormal, Message: "the test says so"},
	}
}

func TestCSIUsage(t *testing.T) {
	now := start
	tests := map[string]struct {
		resp      *csipb.NodeGetVolumeStatsResponse
		condition bool
		want      statsapi.FsStats
		abnormal  *bool
		wantErr   bool
	}{
		"bytes and inodes, the condition ignored without VOLUME_CONDITION": {
			resp: csiStatsResponse(100, true),
			want: statsapi.FsStats{Time: metav1.NewTime(now), CapacityBytes: ptr.To[uint64](1000), AvailableBytes: ptr.To[uint64](900), UsedBytes: ptr.To[uint64](100),
				Inodes: ptr.To[uint64](50), InodesFree: ptr.To[uint64](45), InodesUsed: ptr.To[uint64](5)},
		},
		"with VOLUME_CONDITION, its condition": {
			resp: csiStatsResponse(100, true), condition: true, abnormal: ptr.To(true),
			want: statsapi.FsStats{Time: metav1.NewTime(now), CapacityBytes: ptr.To[uint64](1000), AvailableBytes: ptr.To[uint64](900), UsedBytes: ptr.To[uint64](100),
				Inodes: ptr.To[uint64](50), InodesFree: ptr.To[uint64](45), InodesUsed: ptr.To[uint64](5)},
		},
		"bytes only: inodes are zeros, as the kubelet reports them; a negative figure is zero": {
			resp: &csipb.NodeGetVolumeStatsResponse{Usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_BYTES, Total: 1000, Available: -1, Used: 7}}},
			want: statsapi.FsStats{Time: metav1.NewTime(now), CapacityBytes: ptr.To[uint64](1000), AvailableBytes: ptr.To[uint64](0), UsedBytes: ptr.To[uint64](7),
				Inodes: ptr.To[uint64](0), InodesFree: ptr.To[uint64](0), InodesUsed: ptr.To[uint64](0)},
		},
		"no usage and no condition: an error": {
			resp: &csipb.NodeGetVolumeStatsResponse{}, wantErr: true,
		},
		"a condition alone, with VOLUME_CONDITION: zeros and the condition": {
			resp: &csipb.NodeGetVolumeStatsResponse{VolumeCondition: &csipb.VolumeCondition{}}, condition: true, abnormal: ptr.To(false),
			want: statsapi.FsStats{Time: metav1.NewTime(now), CapacityBytes: ptr.To[uint64](0), AvailableBytes: ptr.To[uint64](0), UsedBytes: ptr.To[uint64](0),
				Inodes: ptr.To[uint64](0), InodesFree: ptr.To[uint64](0), InodesUsed: ptr.To[uint64](0)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u, err := csiUsage(tc.resp, tc.condition, now)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("csiUsage = %+v, want an error", u)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, fsStats(u)); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.abnormal, u.abnormal); diff != "" {
				t.Errorf("abnormal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCSIClaimStatsComeFromItsDriver(t *testing.T) {
	node := &fakeCSINode{
		caps:  []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS, csipb.NodeServiceCapability_RPC_VOLUME_CONDITION},
		stats: fakeCSIStats{resp: csiStatsResponse(300, false)},
	}
	e := newTestEnv(t, Options{CSI: &fakeCSIDrivers{node: node, registered: true}, NodeName: "node-1", StatsPeriod: time.Minute}, csiClaimObjects()...)
	pod := csiClaimPod("uid-1")
	paths, _ := setUp(t, e, pod)
	ctx := context.Background()

	claim := &statsapi.PVCReference{Name: "data", Namespace: "shop"}
	stats := e.m.PodVolumeStats(ctx)[pod.UID]
	if len(stats) != 1 || stats[0].Name != "data" || !cmp.Equal(stats[0].PVCRef, claim) || *stats[0].UsedBytes != 300 || *stats[0].CapacityBytes != 1000 || *stats[0].InodesUsed != 5 {
		t.Fatalf("volume stats %+v, want data's with its pvcRef and the driver's figures", stats)
	}
	want := []*csipb.NodeGetVolumeStatsRequest{{VolumeId: "vol-1", VolumePath: paths["data"]}}
	if diff := cmp.Diff(want, node.statsRequests(), cmp.Comparer(func(a, b *csipb.NodeGetVolumeStatsRequest) bool {
		return a.VolumeId == b.VolumeId && a.VolumePath == b.VolumePath && a.StagingTargetPath == b.StagingTargetPath
	})); diff != "" {
		t.Errorf("NodeGetVolumeStats requests: the handle and the publish path (-want +got):\n%s", diff)
	}
	if claims := e.m.ClaimVolumeStats(ctx); len(claims) != 1 || !cmp.Equal(claims[0].PVCRef, claim) {
		t.Errorf("claim stats %+v, want data's", claims)
	}
	if diff := cmp.Diff(map[statsapi.PVCReference]bool{*claim: false}, e.m.ClaimVolumesAbnormal()); diff != "" {
		t.Errorf("health (-want +got):\n%s", diff)
	}

	// The next period: the driver says the volume went bad.
	node.mu.Lock()
	node.stats.resp = csiStatsResponse(400, true)
	node.mu.Unlock()
	e.clock.Step(time.Minute)
	if stats := e.m.ClaimVolumeStats(ctx); len(stats) != 1 || *stats[0].UsedBytes != 400 {
		t.Errorf("claim stats a period later %+v, want 400 bytes used", stats)
	}
	if diff := cmp.Diff(map[statsapi.PVCReference]bool{*claim: true}, e.m.ClaimVolumesAbnormal()); diff != "" {
		t.Errorf("health a period later (-want +got):\n%s", diff)
	}

	// A failing driver: no stats, and no crash.
	node.mu.Lock()
	node.stats.err = errors.New("driver broke")
	node.mu.Unlock()
	e.clock.Step(time.Minute)
	if stats := e.m.PodVolumeStats(ctx)[pod.UID]; len(stats) != 0 {
		t.Errorf("volume stats from a failing driver: %+v, want none", stats)
	}
	if got := e.m.ClaimVolumesAbnormal(); len(got) != 0 {
		t.Errorf("health from a failing driver: %v, want none", got)
	}
}

func TestCSIVolumeWithoutGetVolumeStatsHasNoStats(t *testing.T) {
	node := &fakeCSINode{stats: fakeCSIStats{resp: csiStatsResponse(300, false)}}
	driver := csiDriverObject(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	})
	e := newTestEnv(t, Options{CSI: &fakeCSIDrivers{node: node, registered: true}, NodeName: "node-1"}, driver)
	pod := makePod(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "mock.csi"}}})
	setUp(t, e, pod)
	if stats := e.m.PodVolumeStats(context.Background())[pod.UID]; len(stats) != 0 {
		t.Errorf("volume stats %+v of a driver without GET_VOLUME_STATS, want none", stats)
	}
	if got := node.statsRequests(); len(got) != 0 {
		t.Errorf("NodeGetVolumeStats asked of a driver without GET_VOLUME_STATS: %v", got)
	}

	// With the capability, an inline volume is reported, without a
	// pvcRef, at its publish path.
	node.mu.Lock()
	node.caps = []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS}
	node.mu.Unlock()
	e.clock.Step(DefaultStatsPeriod)
	stats := e.m.PodVolumeStats(context.Background())[pod.UID]
	if len(stats) != 1 || stats[0].Name != "scratch" || stats[0].PVCRef != nil || *stats[0].UsedBytes != 300 {
		t.Errorf("volume stats %+v, want scratch's, with no pvcRef", stats)
	}
	if got := node.statsRequests(); len(got) != 1 || got[0].VolumePath != filepath.Join(e.root, "pods", string(podUID), "volumes/kubernetes.io~csi/scratch/mount") {
		t.Errorf("NodeGetVolumeStats requests %v, want one at the publish path", got)
	}
}

// A measurement whose driver says the volume is abnormal gives the
// kubelet's VolumeConditionAbnormal warning on the pod; a normal one
// gives none.
func TestCSIAbnormalVolumeGivesTheKubeletsEvent(t *testing.T) {
	node := &fakeCSINode{
		caps:  []csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_GET_VOLUME_STATS, csipb.NodeServiceCapability_RPC_VOLUME_CONDITION},
		stats: fakeCSIStats{resp: csiStatsResponse(300, false)},
	}
	recorder := record.NewFakeRecorder(10)
	e := newTestEnv(t, Options{CSI: &fakeCSIDrivers{node: node, registered: true}, NodeName: "node-1", StatsPeriod: time.Minute, Recorder: recorder}, csiClaimObjects()...)
	setUp(t, e, csiClaimPod("uid-1"))
	ctx := context.Background()

	e.m.ClaimVolumeStats(ctx)
	if n := len(recorder.Events); n != 0 {
		t.Fatalf("%d events for a normal volume: %s", n, <-recorder.Events)
	}
	node.mu.Lock()
	node.stats.resp = csiStatsResponse(300, true)
	node.mu.Unlock()
	e.clock.Step(time.Minute)
	e.m.ClaimVolumeStats(ctx)
	select {
	case got := <-recorder.Events:
		if want := "Warning VolumeConditionAbnormal Volume data: the test says so"; got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	default:
		t.Error("no event for an abnormal volume")
	}
}

func TestVolumeConditionEvent(t *testing.T) {
	tests := map[string]struct {
		u      usage
		want   string
		wantOK bool
	}{
		"no condition":     {},
		"normal":           {u: usage{abnormal: ptr.To(false), conditionReason: "fine"}},
		"abnormal":         {u: usage{abnormal: ptr.To(true), conditionReason: "disk gone"}, want: "Volume data: disk gone", wantOK: true},
		"abnormal, unsaid": {u: usage{abnormal: ptr.To(true)}, want: "Volume data: ", wantOK: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := volumeConditionEvent("data", tc.u)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("volumeConditionEvent = %q %t, want %q %t", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
