package userns

import (
	"testing"
)

func TestNodeRange(t *testing.T) {
	tests := map[string]struct {
		subuid, subgid string
		maxPods        int
		want           Range
		wantErr        string
	}{
		"no files: every ID but the first 65536": {maxPods: 110, want: Range{First: 65536, Length: 1<<32 - 65536}},
		"files naming other users only: the default": {
			subuid: "alice:100000:65536\n", subgid: "alice:100000:65536\n", maxPods: 110,
			want: Range{First: 65536, Length: 1<<32 - 65536},
		},
		"the kubelet user's range": {
			subuid: "alice:100000:65536\nkubelet:65536:7208960\n", subgid: "kubelet:65536:7208960\n", maxPods: 110,
			want: Range{First: 65536, Length: 7208960},
		},
		"subuid and subgid differ": {
			subuid: "kubelet:65536:7208960\n", subgid: "kubelet:131072:7208960\n", maxPods: 110,
			wantErr: `kubelet mappings: mismatched subuids and subgids for user "kubelet"`,
		},
		"a range in one file only": {
			subuid: "kubelet:65536:7208960\n", maxPods: 110,
			wantErr: `kubelet mappings: mismatched subuids and subgids for user "kubelet"`,
		},
		"two ranges": {
			subuid: "kubelet:65536:65536\nkubelet:196608:65536\n", subgid: "kubelet:65536:65536\nkubelet:196608:65536\n", maxPods: 1,
			wantErr: `kubelet mappings: user "kubelet" must have only one range, has 2`,
		},
		"a bad number": {
			subuid: "kubelet:x:65536\n", maxPods: 1,
			wantErr: `kubelet mappings: error parsing line "kubelet:x:65536": strconv.ParseUint: parsing "x": invalid syntax`,
		},
		"a first ID that is not a multiple of 65536": {
			subuid: "kubelet:100000:7208960\n", subgid: "kubelet:100000:7208960\n", maxPods: 110,
			wantErr: "kubelet user assigned ID 100000 is not a multiple of 65536",
		},
		"a range holding the host's root": {
			subuid: "kubelet:0:7208960\n", subgid: "kubelet:0:7208960\n", maxPods: 110,
			wantErr: "kubelet user assigned ID 0 must be greater or equal to 65536",
		},
		"a length that is not a multiple of 65536": {
			subuid: "kubelet:65536:100000\n", subgid: "kubelet:65536:100000\n", maxPods: 1,
			wantErr: "kubelet user assigned IDs length 100000 is not a multiple of 65536",
		},
		"too few IDs for maxPods": {
			subuid: "kubelet:65536:655360\n", subgid: "kubelet:65536:655360\n", maxPods: 110,
			wantErr: "kubelet user assigned IDs are not enough to support 110 pods",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var subuid, subgid []byte
			if tc.subuid != "" {
				subuid = []byte(tc.subuid)
			}
			if tc.subgid != "" {
				subgid = []byte(tc.subgid)
			}
			got, err := NodeRange(subuid, subgid, tc.maxPods)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("NodeRange() error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("NodeRange() = %+v, %v, want %+v", got, err, tc.want)
			}
		})
	}
}
