package volume

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// Tables of the volume stats decisions (usage.go): plain values, no files.

func TestVolumeUsageMethod(t *testing.T) {
	tests := map[string]struct {
		source corev1.VolumeSource
		want   usageMethod
	}{
		"emptyDir: walked":           {source: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, want: usageWalk},
		"emptyDir in memory: walked": {source: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}, want: usageWalk},
		"configMap: walked":          {source: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}, want: usageWalk},
		"secret: walked":             {source: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, want: usageWalk},
		"downwardAPI: walked":        {source: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}, want: usageWalk},
		"projected: walked":          {source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}, want: usageWalk},
		"hostPath: the node's, none": {source: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}, want: usageNone},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := volumeUsageMethod(&corev1.Volume{Name: "v", VolumeSource: tc.source}); got != tc.want {
				t.Errorf("volumeUsageMethod = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClaimUsageMethod(t *testing.T) {
	if got := claimUsageMethod(true, true); got != usageFileSystem {
		t.Errorf("a claim on a file system of its own: %v, want statfs", got)
	}
	if got := claimUsageMethod(false, true); got != usageWalk {
		t.Errorf("a claim on a folder of the node's disk: %v, want a walk", got)
	}
	if got := claimUsageMethod(true, false); got != usageNone {
		t.Errorf("a claim of a type not reported: %v, want none", got)
	}
}

func TestFsStats(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	fs := fsInfo{capacity: 1000, available: 300, used: 600, inodes: 50, inodesFree: 20}
	tests := map[string]struct {
		u    usage
		want statsapi.FsStats
	}{
		"a walked volume reports its files, and its file system's room": {
			u: usage{at: at, fs: fs, walked: true, used: 40, inodesUsed: 3},
			want: statsapi.FsStats{Time: metav1.NewTime(at), CapacityBytes: ptr.To[uint64](1000), AvailableBytes: ptr.To[uint64](300),
				UsedBytes: ptr.To[uint64](40), Inodes: ptr.To[uint64](50), InodesFree: ptr.To[uint64](20), InodesUsed: ptr.To[uint64](3)},
		},
		"a file system of its own reports the file system's use": {
			u: usage{at: at, fs: fs},
			want: statsapi.FsStats{Time: metav1.NewTime(at), CapacityBytes: ptr.To[uint64](1000), AvailableBytes: ptr.To[uint64](300),
				UsedBytes: ptr.To[uint64](600), Inodes: ptr.To[uint64](50), InodesFree: ptr.To[uint64](20), InodesUsed: ptr.To[uint64](30)},
		},
		"a file system reporting more free inodes than it has (some do): none used": {
			u: usage{at: at, fs: fsInfo{inodes: 0, inodesFree: 10}},
			want: statsapi.FsStats{Time: metav1.NewTime(at), CapacityBytes: ptr.To[uint64](0), AvailableBytes: ptr.To[uint64](0),
				UsedBytes: ptr.To[uint64](0), Inodes: ptr.To[uint64](0), InodesFree: ptr.To[uint64](10), InodesUsed: ptr.To[uint64](0)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fsStats(tc.u)); diff != "" {
				t.Errorf("fsStats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNeedsMeasuring(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		measuredAt time.Time
		want       bool
	}{
		"never measured":           {want: true},
		"measured just now":        {measuredAt: now},
		"measured within a period": {measuredAt: now.Add(-59 * time.Second)},
		"measured a period ago":    {measuredAt: now.Add(-time.Minute), want: true},
		"measured long ago":        {measuredAt: now.Add(-time.Hour), want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := needsMeasuring(tc.measuredAt, now, time.Minute); got != tc.want {
				t.Errorf("needsMeasuring = %v, want %v", got, tc.want)
			}
		})
	}
}
