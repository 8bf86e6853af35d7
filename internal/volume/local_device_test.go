// Tests of the decisions about local devices: pure, on text written here.
package volume

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestFormatDecision(t *testing.T) {
	tests := map[string]struct {
		blkid      string
		wantFormat bool
		wantErr    string
	}{
		"nothing found (blkid's exit status 2): formatted": {wantFormat: true},
		"a file system: kept":                              {blkid: "DEVNAME=/dev/loop3\nTYPE=ext4\n"},
		"another file system: kept too":                    {blkid: "TYPE=xfs\n"},
		"partitions without a file system: never formatted, never mounted": {
			blkid:   "DEVNAME=/dev/loop3\nPTTYPE=dos\n",
			wantErr: "failed to get disk format of disk /dev/loop3: disk /dev/loop3 has partitions (dos) but no file system",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			format, err := formatDecision(parseBlkid(tc.blkid), "/dev/loop3")
			if got := fmt.Sprint(err); (err != nil || tc.wantErr != "") && got != tc.wantErr {
				t.Fatalf("error = %q, want %q", got, tc.wantErr)
			}
			if format != tc.wantFormat {
				t.Errorf("format = %t, want %t", format, tc.wantFormat)
			}
		})
	}
}

func TestLocalDeviceFormatAndMountOptions(t *testing.T) {
	if diff := cmp.Diff([]string{"-F", "-m0", "/dev/loop3"}, mkfsArgs("ext4", "/dev/loop3")); diff != "" {
		t.Errorf("mkfs.ext4 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"-f", "/dev/loop3"}, mkfsArgs("xfs", "/dev/loop3")); diff != "" {
		t.Errorf("mkfs.xfs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ro", "noatime"}, localDeviceMountOptions(true, []string{"noatime"})); diff != "" {
		t.Errorf("read-only options (-want +got):\n%s", diff)
	}
	pv := localPV()
	if got := localFSType(pv); got != "ext4" {
		t.Errorf("fsType unset: %q, want ext4 (the kubelet's default)", got)
	}
	pv.Spec.Local = &corev1.LocalVolumeSource{Path: "/dev/loop3", FSType: ptr.To("xfs")}
	if got := localFSType(pv); got != "xfs" {
		t.Errorf("fsType xfs: %q", got)
	}
}
