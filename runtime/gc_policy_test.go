package runtime

// Pure tests of the dead container policy: one base record, mutated per
// case, and the whole decision compared.

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestDeadToRemove(t *testing.T) {
	t0 := time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)
	sandbox := func(id string, state kubecontainer.SandboxState, age time.Duration) *kubecontainer.SandboxStatus {
		return &kubecontainer.SandboxStatus{ID: id, State: state, CreatedAt: t0.Add(-age)}
	}
	container := func(id, name, sandboxID string, state kubecontainer.ContainerState, age time.Duration) *kubecontainer.ContainerStatus {
		return &kubecontainer.ContainerStatus{ID: kubecontainer.ContainerID{Type: "containerd", ID: id}, Name: name, SandboxID: sandboxID, State: state, CreatedAt: t0.Add(-age)}
	}
	// A running pod whose app has crashed twice in its current sandbox and
	// once in an older one, beside a sidecar that ran once and a running
	// logger; newest first, as the record is kept.
	base := func() *kubecontainer.PodStatus {
		return &kubecontainer.PodStatus{
			UID: "uid", Name: "web", Namespace: "ns",
			Sandboxes: []*kubecontainer.SandboxStatus{
				sandbox("sb-new", kubecontainer.SandboxReady, time.Minute),
				sandbox("sb-old", kubecontainer.SandboxNotReady, time.Hour),
				sandbox("sb-oldest", kubecontainer.SandboxNotReady, 2*time.Hour),
			},
			Containers: []*kubecontainer.ContainerStatus{
				container("app-3", "app", "sb-new", kubecontainer.ContainerRunning, 10*time.Second),
				container("logger-1", "logger", "sb-new", kubecontainer.ContainerRunning, 50*time.Second),
				container("app-2", "app", "sb-new", kubecontainer.ContainerExited, 20*time.Second),
				container("app-1", "app", "sb-new", kubecontainer.ContainerExited, 30*time.Second),
				container("init-1", "init", "sb-new", kubecontainer.ContainerExited, 55*time.Second),
				container("app-0", "app", "sb-old", kubecontainer.ContainerExited, 50*time.Minute),
			},
		}
	}
	ids := func(d Dead) (containers, sandboxes []string) {
		for _, c := range d.Containers {
			containers = append(containers, c.ID.ID)
		}
		for _, sb := range d.Sandboxes {
			sandboxes = append(sandboxes, sb.ID)
		}
		return containers, sandboxes
	}
	for name, tc := range map[string]struct {
		mutate         func(*kubecontainer.PodStatus)
		terminated     bool
		wantContainers []string
		wantSandboxes  []string
	}{
		"a running pod keeps the newest dead instance of each container and the sandboxes that hold what stays": {
			wantContainers: []string{"app-1", "app-0"},
			wantSandboxes:  []string{"sb-old", "sb-oldest"},
		},
		"an old sandbox holding the newest dead instance of a container stays with it": {
			mutate: func(s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{
					container("app-1", "app", "sb-new", kubecontainer.ContainerRunning, 10*time.Second),
					container("init-0", "init", "sb-old", kubecontainer.ContainerExited, 50*time.Minute),
				}
			},
			wantSandboxes: []string{"sb-oldest"},
		},
		"the newest sandbox stays while the pod runs, even stopped and empty": {
			mutate: func(s *kubecontainer.PodStatus) {
				s.Sandboxes[0].State = kubecontainer.SandboxNotReady
				s.Containers = nil
			},
			wantSandboxes: []string{"sb-old", "sb-oldest"},
		},
		"a created container is kept as a running one, and so is its sandbox": {
			mutate: func(s *kubecontainer.PodStatus) {
				s.Containers = []*kubecontainer.ContainerStatus{container("app-9", "app", "sb-old", kubecontainer.ContainerCreated, time.Second)}
			},
			wantSandboxes: []string{"sb-oldest"},
		},
		"a terminated pod loses every dead container and every stopped sandbox": {
			mutate: func(s *kubecontainer.PodStatus) {
				s.Sandboxes[0].State = kubecontainer.SandboxNotReady
				for _, c := range s.Containers {
					c.State = kubecontainer.ContainerExited
				}
			},
			terminated:     true,
			wantContainers: []string{"app-3", "logger-1", "app-2", "app-1", "init-1", "app-0"},
			wantSandboxes:  []string{"sb-new", "sb-old", "sb-oldest"},
		},
		"a terminated pod still stopping keeps what runs and its sandbox, and a ready sandbox": {
			terminated:     true,
			wantContainers: []string{"app-2", "app-1", "init-1", "app-0"},
			wantSandboxes:  []string{"sb-old", "sb-oldest"},
		},
		"nothing to remove from a pod without dead containers or old sandboxes": {
			mutate: func(s *kubecontainer.PodStatus) {
				s.Sandboxes = s.Sandboxes[:1]
				s.Containers = s.Containers[:2]
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			status := base()
			if tc.mutate != nil {
				tc.mutate(status)
			}
			dead := DeadToRemove(status, tc.terminated)
			gotContainers, gotSandboxes := ids(dead)
			if diff := cmp.Diff(tc.wantContainers, gotContainers); diff != "" {
				t.Errorf("containers removed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSandboxes, gotSandboxes); diff != "" {
				t.Errorf("sandboxes removed (-want +got):\n%s", diff)
			}
			if dead.Empty() != (len(tc.wantContainers)+len(tc.wantSandboxes) == 0) {
				t.Errorf("Empty() = %v", dead.Empty())
			}
		})
	}
}
