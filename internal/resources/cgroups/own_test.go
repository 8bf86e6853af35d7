package cgroups

import (
	"strings"
	"testing"
)

func TestPodCgroup(t *testing.T) {
	tests := map[string]struct {
		procCgroup string
		want       string
		wantErr    string
	}{
		"cgroup v2, the host kubelet's cgroupfs driver": {
			procCgroup: "0::/kubepods/burstable/pod0f6c9a4e-5a8e-4b9e-9d1e-2f3c4b5a6d7e/3b1f0c2d\n",
			want:       "/kubepods/burstable/pod0f6c9a4e-5a8e-4b9e-9d1e-2f3c4b5a6d7e",
		},
		"cgroup v2, the systemd driver": {
			procCgroup: "0::/kubepods.slice/kubepods-pod0f6c9a4e_5a8e.slice/cri-containerd-3b1f0c2d.scope\n",
			want:       "/kubepods.slice/kubepods-pod0f6c9a4e_5a8e.slice",
		},
		"cgroup v1: the memory controller's line": {
			procCgroup: "12:pids:/kubepods/besteffort/podabc/c1\n5:cpu,cpuacct:/kubepods/besteffort/podabc/c1\n4:memory:/kubepods/besteffort/podabc/c1\n1:name=systemd:/system.slice/containerd.service\n",
			want:       "/kubepods/besteffort/podabc",
		},
		"hybrid: the memory controller's line, where the pod's memory limit is": {
			procCgroup: "4:memory:/kubepods/podabc/c1\n0::/kubepods/podabc/c1\n",
			want:       "/kubepods/podabc",
		},
		"cgroup v1 with the kernel's line of a cgroup2 mounted nowhere": {
			procCgroup: "9:name=systemd:/\n4:memory:/kubepods/burstable/podabc/c1\n1:cpu:/kubepods/burstable/podabc/c1\n0::/\n",
			want:       "/kubepods/burstable/podabc",
		},
		"in a cgroup namespace, the own cgroup is the root": {
			procCgroup: "0::/\n",
			wantErr:    "no pod cgroup above it",
		},
		"a cgroup right under the root is no pod's": {
			procCgroup: "0::/init.scope\n",
			wantErr:    "no pod cgroup above it",
		},
		"a path seen from inside another namespace": {
			procCgroup: "0::/../../kubepods/podabc/c1\n",
			wantErr:    "not a clean absolute path",
		},
		"nothing usable": {
			procCgroup: "3:cpuset:/kubepods/podabc/c1\n",
			wantErr:    "no unified or memory cgroup",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := PodCgroup(tc.procCgroup)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("PodCgroup() = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("PodCgroup() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestPidsDir(t *testing.T) {
	tests := map[string]struct {
		hierarchies []Hierarchy
		want        string
		wantOK      bool
	}{
		"cgroup v1's pids hierarchy": {
			hierarchies: []Hierarchy{{MountPoint: "/sys/fs/cgroup/unified", Unified: true}, {MountPoint: "/sys/fs/cgroup/pids", Controllers: []string{"pids"}}},
			want:        "/sys/fs/cgroup/pids/kubepods/pod1", wantOK: true,
		},
		"the unified hierarchy without a v1 one": {
			hierarchies: []Hierarchy{{MountPoint: "/sys/fs/cgroup", Unified: true, Controllers: []string{"memory", "pids"}}},
			want:        "/sys/fs/cgroup/kubepods/pod1", wantOK: true,
		},
		"none mounted": {hierarchies: []Hierarchy{{MountPoint: "/sys/fs/cgroup/memory", Controllers: []string{"memory"}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := PidsDir(tc.hierarchies, "/kubepods/pod1")
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("PidsDir() = %q, %v, want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParsePidsMax(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    int64
		wantErr bool
	}{
		"a limit":        {in: "4096\n", want: 4096},
		"no limit":       {in: "max\n", want: 0},
		"not a count":    {in: "many\n", wantErr: true},
		"a negative one": {in: "-1\n", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parsePidsMax(tc.in)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("parsePidsMax(%q) = %d, %v, want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
