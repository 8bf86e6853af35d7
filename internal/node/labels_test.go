package node

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestUpdateDefaultLabels(t *testing.T) {
	initial := &corev1.Node{}
	initial.Labels = map[string]string{
		corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-b", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		LabelAgent: "nodelet", "nodelet.dev/release": "new",
	}
	tests := map[string]struct {
		existing    map[string]string
		want        map[string]string
		wantChanged bool
	}{
		"as created": {
			existing: map[string]string{corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-b", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
			want:     map[string]string{corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-b", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
		},
		"the zone and hostname moved, the release label and the admin's are the Node's": {
			existing: map[string]string{
				corev1.LabelHostname: "old", corev1.LabelTopologyZone: "zone-a", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				"nodelet.dev/release": "old", "admin": "kept",
			},
			want: map[string]string{
				corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-b", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				"nodelet.dev/release": "old", "admin": "kept",
			},
			wantChanged: true,
		},
		"a region no longer given is left": {
			existing: map[string]string{
				corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-b", corev1.LabelTopologyRegion: "region-a", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			},
			want: map[string]string{
				corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-b", corev1.LabelTopologyRegion: "region-a", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			},
		},
		"none at all": {
			existing:    nil,
			want:        map[string]string{corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-b", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"},
			wantChanged: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			existing := &corev1.Node{}
			existing.Labels = tc.existing
			changed := updateDefaultLabels(initial, existing)
			if diff := cmp.Diff(tc.want, existing.Labels); diff != "" || changed != tc.wantChanged {
				t.Errorf("updateDefaultLabels() changed %v (want %v), labels mismatch (-want +got):\n%s", changed, tc.wantChanged, diff)
			}
		})
	}
}
