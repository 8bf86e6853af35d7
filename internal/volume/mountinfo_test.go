// Tests of the mountinfo parser and the unmount order: pure, on text
// written here.
package volume

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMountInfo(t *testing.T) {
	data := `22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,seclabel
36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
41 22 0:39 / /var/lib/nodelet/pods/u1/volumes/kubernetes.io~projected/kube-api-access-x rw,relatime,seclabel - tmpfs tmpfs rw,size=65536k
42 22 0:40 / /var/lib/my\040dir/with\011tab\134slash rw shared:7 master:3 propagate_from:2 - tmpfs my\040src rw

`
	got, err := parseMountInfo([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := []mountInfo{
		{ID: 22, ParentID: 1, Root: "/", MountPoint: "/", FSType: "ext4", Source: "/dev/vda1", Shared: true, SELinuxLabels: true},
		{ID: 36, ParentID: 35, Root: "/mnt1", MountPoint: "/mnt2", FSType: "ext3", Source: "/dev/root"},
		{ID: 41, ParentID: 22, Root: "/", MountPoint: "/var/lib/nodelet/pods/u1/volumes/kubernetes.io~projected/kube-api-access-x", FSType: "tmpfs", Source: "tmpfs", SELinuxLabels: true},
		{ID: 42, ParentID: 22, Root: "/", MountPoint: "/var/lib/my dir/with\ttab\\slash", FSType: "tmpfs", Source: "my src", Shared: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
}

func TestParseMountInfoRejectsMalformedLines(t *testing.T) {
	tests := map[string]string{
		"no separator":             "22 1 253:1 / / rw,relatime shared:1 ext4 /dev/vda1 rw\n",
		"nothing after the dash":   "22 1 253:1 / / rw - ext4\n",
		"a mount ID that is no ID": "x 1 253:1 / / rw - ext4 /dev/vda1 rw\n",
		"too few fields":           "22 1 253:1 /\n",
	}
	for name, line := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := parseMountInfo([]byte(line)); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestMountsUnder(t *testing.T) {
	mounts := []mountInfo{
		{ID: 20, MountPoint: "/"},
		{ID: 30, MountPoint: "/pods/u1/volumes/kubernetes.io~empty-dir/cache"},
		{ID: 31, MountPoint: "/pods/u1/volumes/kubernetes.io~empty-dir/cache/inner"},
		{ID: 32, MountPoint: "/pods/u1"},
		{ID: 33, MountPoint: "/pods/u10/volumes/kubernetes.io~projected/x"},
		{ID: 34, MountPoint: "/pods/u1/volumes/kubernetes.io~projected/x"},
		{ID: 35, MountPoint: "/pods/u1/volumes/kubernetes.io~empty-dir/cache"},
	}
	var got []int
	for _, m := range mountsUnder(mounts, "/pods/u1") {
		got = append(got, m.ID)
	}
	// Deepest first; of the two stacked at cache, the later one first;
	// the pod folder itself last; the other pod (u10) left alone.
	want := []int{31, 35, 34, 30, 32}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unmount order (-want +got):\n%s", diff)
	}
}

func TestMountOf(t *testing.T) {
	mounts := []mountInfo{
		{ID: 20, MountPoint: "/"},
		{ID: 30, MountPoint: "/var/lib/nodelet"},
		{ID: 31, MountPoint: "/var/lib/nodelet", Shared: true},
		{ID: 32, MountPoint: "/var/lib/nodelet/pods/u1/volumes/x"},
		{ID: 33, MountPoint: "/var/lib/nodelet-other"},
	}
	tests := map[string]struct {
		dir    string
		wantID int
	}{
		"a folder on the root file system":            {dir: "/etc", wantID: 20},
		"a mount point, the last mount stacked there": {dir: "/var/lib/nodelet", wantID: 31},
		"a folder below a mount point":                {dir: "/var/lib/nodelet/pods/u1", wantID: 31},
		"a deeper mount point":                        {dir: "/var/lib/nodelet/pods/u1/volumes/x/y", wantID: 32},
		"a sibling whose name extends another's":      {dir: "/var/lib/nodelet-other/z", wantID: 33},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := mountOf(mounts, tc.dir)
			if !ok || got.ID != tc.wantID {
				t.Errorf("mountOf(%q) = %d, %v, want %d", tc.dir, got.ID, ok, tc.wantID)
			}
		})
	}
	if _, ok := mountOf(nil, "/x"); ok {
		t.Error("mountOf() found a mount in an empty list")
	}
}
