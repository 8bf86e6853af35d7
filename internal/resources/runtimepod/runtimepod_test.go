package runtimepod

// Decide's table, the Watcher's acting on it with a scripted observation
// and client-go's fake clientset as the API server (fakes: the Node's
// event is read back from it), and look against folders in t.TempDir()
// standing for cgroup hierarchies and a real unix socket this process
// listens on.

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

const started = "/kubepods/burstable/pod-old"

func TestDecide(t *testing.T) {
	for name, tc := range map[string]struct {
		seen         Observation
		wantReplaced bool
		wantIn       string
	}{
		"the runtime listens in the pod it started in": {
			seen: Observation{ListenerCgroup: started},
		},
		"nothing listens, the cgroup is there: the runtime restarts in its pod": {
			seen: Observation{},
		},
		"the cgroup is gone": {
			seen:         Observation{CgroupGone: true},
			wantReplaced: true, wantIn: "cgroup " + started + " is gone",
		},
		"the cgroup is gone, the runtime already back in the new pod": {
			seen:         Observation{CgroupGone: true, ListenerCgroup: "/kubepods/burstable/pod-new"},
			wantReplaced: true, wantIn: "cgroup " + started + " is gone",
		},
		"the runtime listens in another pod, the old cgroup not yet removed": {
			seen:         Observation{ListenerCgroup: "/kubepods/burstable/pod-new"},
			wantReplaced: true, wantIn: "listens in pod cgroup /kubepods/burstable/pod-new, not " + started,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := Decide(started, tc.seen)
			if got.Replaced != tc.wantReplaced || !strings.Contains(got.Message, tc.wantIn) {
				t.Errorf("Decide(%+v) = %+v, want replaced %v saying %q", tc.seen, got, tc.wantReplaced, tc.wantIn)
			}
		})
	}
}

// The Watcher keeps looking while the runtime restarts in its pod, then,
// its cgroup gone, seals the pods' cgroups, writes the Node's event and
// stops with ErrReplaced.
func TestWatcherStopsNodeletWhenThePodIsReplaced(t *testing.T) {
	client := fake.NewClientset()
	var sealed error
	w := &Watcher{opts: Options{
		Cgroup: started, NodeName: "host-nodelet", Period: time.Millisecond,
		Events: client.CoreV1(), Seal: func(err error) { sealed = err },
		Clock: clock.RealClock{}, Log: logr.Discard(),
	}}
	script := []Observation{{ListenerCgroup: started}, {}, {ListenerCgroup: started}, {CgroupGone: true}}
	looks := 0
	w.observe = func(context.Context) Observation {
		looks++
		if sealed != nil {
			t.Error("the Watcher sealed the cgroups before the pod was replaced")
		}
		return script[min(looks, len(script))-1]
	}

	err := w.Start(t.Context())
	if !errors.Is(err, ErrReplaced) || looks != len(script) {
		t.Fatalf("Start() = %v after %d looks, want ErrReplaced after %d", err, looks, len(script))
	}
	if !errors.Is(sealed, ErrReplaced) {
		t.Errorf("the pods' cgroups sealed with %v, want ErrReplaced", sealed)
	}
	events, err := client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 {
		t.Fatalf("%d events, want 1", len(events.Items))
	}
	e := events.Items[0]
	got := []string{e.Type, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Source.Component, e.Source.Host}
	want := []string{corev1.EventTypeWarning, ReasonRuntimePodReplaced, "Node", "host-nodelet", "kubelet", "host-nodelet"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the Node's event (-want +got):\n%s", diff)
	}
	if !strings.Contains(e.Message, started+" is gone") {
		t.Errorf("event message %q does not name the gone cgroup", e.Message)
	}
}

func TestWatcherEndsWithItsContext(t *testing.T) {
	w := &Watcher{opts: Options{Cgroup: started, Period: time.Millisecond, Clock: clock.RealClock{}, Log: logr.Discard(),
		Seal: func(error) { t.Error("sealed") }}}
	ctx, cancel := context.WithCancel(t.Context())
	w.observe = func(context.Context) Observation {
		cancel()
		return Observation{ListenerCgroup: started}
	}
	if err := w.Start(ctx); err != nil {
		t.Errorf("Start() = %v after its context ended, want nil", err)
	}
}

// look sees the cgroup leave one of the hierarchies it was in, and the
// listener of the socket: this test's process, whose pod cgroup (or none,
// outside a pod) PodCgroupOf reads the same way.
func TestLook(t *testing.T) {
	base := t.TempDir()
	var hierarchies []cgroups.Hierarchy
	for _, name := range []string{"memory", "pids", "rdma"} {
		hierarchies = append(hierarchies, cgroups.Hierarchy{MountPoint: filepath.Join(base, name), Controllers: []string{name}})
		if name != "rdma" {
			if err := os.MkdirAll(filepath.Join(base, name, started), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	socket := filepath.Join(t.TempDir(), "containerd.sock")
	w, err := New(Options{Cgroup: started, Socket: socket, Hierarchies: hierarchies})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.look(t.Context()); got != (Observation{}) {
		t.Errorf("look() with nothing listening = %+v, want the cgroup there and no listener", got)
	}

	listen(t, socket)
	own, _ := PodCgroupOf(os.Getpid())
	if got := w.look(t.Context()); got != (Observation{ListenerCgroup: own}) {
		t.Errorf("look() with this process listening = %+v, want its pod cgroup %q", got, own)
	}

	if err := os.Remove(filepath.Join(base, "pids", started)); err != nil {
		t.Fatal(err)
	}
	if got := w.look(t.Context()); !got.CgroupGone {
		t.Errorf("look() with the cgroup gone from the pids hierarchy = %+v, want it gone", got)
	}
}

func TestNewNeedsTheCgroup(t *testing.T) {
	hierarchies := []cgroups.Hierarchy{{MountPoint: t.TempDir(), Controllers: []string{"memory"}}}
	if _, err := New(Options{Cgroup: started, Hierarchies: hierarchies}); err == nil {
		t.Error("New() of a cgroup in no hierarchy: no error")
	}
}

// ListenerPID reads the listener's PID from a real unix socket this
// process listens on.
func TestListenerPID(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "runtime.sock")
	listen(t, socket)
	pid, err := ListenerPID(t.Context(), socket)
	if err != nil || pid != os.Getpid() {
		t.Errorf("ListenerPID(%s) = %d, %v; want this process's %d", socket, pid, err, os.Getpid())
	}
	if _, err := ListenerPID(t.Context(), filepath.Join(t.TempDir(), "none.sock")); err == nil {
		t.Error("ListenerPID of a socket nobody listens on: no error")
	}
}

// An API server that refuses the first write (out of reach for a moment)
// still gets the Node's event: the write is tried again.
func TestWatcherWritesTheEventAgainAfterAFailure(t *testing.T) {
	client := fake.NewClientset()
	refused := 0
	client.PrependReactor("create", "events", func(k8stesting.Action) (bool, apiruntime.Object, error) {
		if refused == 0 {
			refused++
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	w := &Watcher{opts: Options{Cgroup: started, NodeName: "host-nodelet", Period: time.Millisecond,
		Events: client.CoreV1(), Seal: func(error) {}, Clock: clock.RealClock{}, Log: logr.Discard()}}
	w.observe = func(context.Context) Observation { return Observation{CgroupGone: true} }
	if err := w.Start(t.Context()); !errors.Is(err, ErrReplaced) {
		t.Fatalf("Start() = %v, want ErrReplaced", err)
	}
	events, err := client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refused != 1 || len(events.Items) != 1 {
		t.Errorf("%d writes refused, %d events written; want 1 and 1", refused, len(events.Items))
	}
}

// listen listens on a unix socket at path, as a runtime would, taking
// and closing connections until the test ends.
func listen(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
}
