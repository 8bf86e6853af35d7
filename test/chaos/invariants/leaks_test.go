package invariants

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLeaks(t *testing.T) {
	const live, dead = "uid-live", "uid-dead"
	// clean is a node with one live pod and everything it should have.
	clean := func() NodeState {
		return NodeState{
			LivePods:          map[string]bool{live: true},
			Sandboxes:         []Sandbox{{ID: "sb-live", PodUID: live, Ready: true}, {ID: "sb-old", PodUID: live}},
			Containers:        []Container{{ID: "c-live", PodUID: live, Name: "app"}},
			Addresses:         map[string]string{"10.0.0.2": "sb-live"},
			NetworkNamespaces: []string{"/run/netns/cni-1"},
			PodDirs:           []string{live},
			PodLogDirs:        []string{"ns_p_" + live},
			PodCgroups:        []string{live},
			PodMounts:         map[string]string{"/pods/" + live + "/volumes/x": live},
			CNIResults:        map[string]string{"net-sb-live-eth0": "sb-live"},
			LogLinks:          map[string]string{"p_ns_app-c-live.log": "c-live"},
		}
	}
	tests := map[string]struct {
		mutate func(*NodeState)
		want   []string
	}{
		"a live pod's things, an old sandbox of it included, are no leak": {},
		"a sandbox and a container of a gone pod": {
			mutate: func(s *NodeState) {
				s.Sandboxes = append(s.Sandboxes, Sandbox{ID: "sb-dead", PodUID: dead})
				s.Containers = append(s.Containers, Container{ID: "c-dead", PodUID: dead, Name: "app"})
			},
			want: []string{"container c-dead (app) of gone pod uid-dead", "sandbox sb-dead of gone pod uid-dead"},
		},
		"an address and a CNI result of a sandbox not ready": {
			mutate: func(s *NodeState) {
				s.Addresses["10.0.0.3"] = "sb-old"
				s.CNIResults["net-sb-old-eth0"] = "sb-old"
			},
			want: []string{"CNI result net-sb-old-eth0 of sandbox sb-old, which is not ready", "address 10.0.0.3 held for sandbox sb-old, which is not ready"},
		},
		"more network namespaces than ready sandboxes": {
			mutate: func(s *NodeState) { s.NetworkNamespaces = append(s.NetworkNamespaces, "/run/netns/cni-2") },
			want:   []string{"2 network namespaces for 1 ready sandboxes: /run/netns/cni-1 /run/netns/cni-2"},
		},
		"a gone pod's folder, log folder, cgroup and mount": {
			mutate: func(s *NodeState) {
				s.PodDirs = append(s.PodDirs, dead)
				s.PodLogDirs = append(s.PodLogDirs, "ns_q_"+dead)
				s.PodCgroups = append(s.PodCgroups, dead)
				s.PodMounts["/pods/"+dead+"/volumes/y"] = dead
			},
			want: []string{
				"cgroup of gone pod uid-dead", "log folder ns_q_uid-dead of gone pod uid-dead",
				"mount /pods/uid-dead/volumes/y of gone pod uid-dead", "pod folder of gone pod uid-dead",
			},
		},
		"a log link to a gone container": {
			mutate: func(s *NodeState) { s.LogLinks["p_ns_app-c-gone.log"] = "c-gone" },
			want:   []string{"log link p_ns_app-c-gone.log to container c-gone, which is gone"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			state := clean()
			if tc.mutate != nil {
				tc.mutate(&state)
			}
			if diff := cmp.Diff(tc.want, Leaks(state)); diff != "" {
				t.Errorf("Leaks() (-want +got):\n%s", diff)
			}
		})
	}
}
