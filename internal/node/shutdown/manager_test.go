package shutdown

// The manager against a fake logind (this file's) and controller-runtime's
// fake client; a stand-in for the pod reconciler fails each pod it is
// told to stop, as evictPod does.

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// fakeLogind keeps InhibitDelayMaxSec, the drop-in and the locks as logind
// would: a lock is held until every copy of its file is closed.
type fakeLogind struct {
	mu        sync.Mutex
	delay     time.Duration
	dropIn    time.Duration
	reloadsTo bool // a reload takes the drop-in
	locks     []*os.File
	events    chan bool
}

func (f *fakeLogind) InhibitDelayMax() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delay, nil
}

func (f *fakeLogind) OverrideInhibitDelay(d time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropIn = d
	return nil
}

func (f *fakeLogind) written() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropIn
}

func (f *fakeLogind) ReloadConf() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reloadsTo {
		f.delay = f.dropIn
	}
	return nil
}

// Inhibit hands out the writing end of a pipe and keeps the reading one:
// the lock is released when a read of it ends.
func (f *fakeLogind) Inhibit() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locks = append(f.locks, r)
	return w, nil
}

func (f *fakeLogind) WatchShutdown(context.Context) (<-chan bool, error) { return f.events, nil }
func (f *fakeLogind) Close() error                                       { return nil }

func (f *fakeLogind) lock(i int) *os.File {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < len(f.locks) {
		return f.locks[i]
	}
	return nil
}

// taken waits for the i-th lock to be taken, with a deadline.
func (f *fakeLogind) taken(t *testing.T, i int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f.lock(i) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("lock %d never taken", i)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// released waits for the i-th lock to be released, with a deadline.
func (f *fakeLogind) released(t *testing.T, i int) {
	t.Helper()
	f.taken(t, i)
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(f.lock(i)); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("lock %d not released within 10s", i)
	}
}

func pod(name string, priority int32, grace int64, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
		Spec:       corev1.PodSpec{NodeName: "n", Priority: &priority, TerminationGracePeriodSeconds: &grace},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

type stop struct {
	Name  string
	Grace int64
}

func TestShutdownStopsPodsByPriorityAndCancels(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		pod("critical", 2000000000, 30, corev1.PodRunning),
		pod("high", 1000, 2, corev1.PodRunning),
		pod("low", 0, 30, corev1.PodPending),
		pod("done", 0, 30, corev1.PodSucceeded),
	).WithStatusSubresource(&corev1.Pod{}).Build()
	logind := &fakeLogind{reloadsTo: true, events: make(chan bool)}
	recorder := record.NewFakeRecorder(10)
	var mu sync.Mutex
	var stops []stop
	syncs := 0
	var m *Manager
	m = New(c, Options{
		Bands:    []Band{{Priority: 0, ShutdownGracePeriodSeconds: 5}, {Priority: 1000, ShutdownGracePeriodSeconds: 3}, {Priority: 2000000000, ShutdownGracePeriodSeconds: 1}},
		NodeName: "n",
		Connect:  func() (Logind, error) { return logind, nil },
		// The pod reconciler's part: stop the pod, write it Failed.
		Enqueue: func(namespace, name string, uid types.UID) {
			grace, ok := m.Order(uid)
			if !ok {
				t.Errorf("pod %s enqueued without an order", name)
			}
			mu.Lock()
			stops = append(stops, stop{name, grace})
			mu.Unlock()
			p := &corev1.Pod{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
				t.Error(err)
				return
			}
			p.Status.Phase = corev1.PodFailed
			if err := c.Status().Update(context.Background(), p); err != nil {
				t.Error(err)
			}
		},
		SyncNodeStatus: func() { mu.Lock(); syncs++; mu.Unlock() },
		Recorder:       recorder,
	})
	stopManager := startManager(t, m)

	logind.events <- true
	logind.released(t, 0)

	if delay, _ := logind.InhibitDelayMax(); delay != 9*time.Second {
		t.Errorf("InhibitDelayMaxSec = %v, want the sum of the bands, 9s", delay)
	}
	mu.Lock()
	if diff := cmp.Diff([]stop{{"low", 5}, {"high", 2}, {"critical", 1}}, stops); diff != "" {
		t.Errorf("pods stopped (-want +got):\n%s", diff)
	}
	if syncs != 1 {
		t.Errorf("node status synced %d times, want once as the shutdown began", syncs)
	}
	mu.Unlock()
	if err := m.ShutdownStatus(); err == nil || err.Error() != "node is shutting down" {
		t.Errorf("ShutdownStatus = %v, want the kubelet's %q", err, "node is shutting down")
	}
	if r := m.Admit(); r.Admit || r.Reason != "NodeShutdown" || r.Message != "Pod was rejected as the node is shutting down." {
		t.Errorf("Admit while shutting down = %+v, want the kubelet's refusal", r)
	}
	low := &corev1.Pod{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "low"}, low); err != nil {
		t.Fatal(err)
	}
	var condition *corev1.PodCondition
	for i := range low.Status.Conditions {
		if low.Status.Conditions[i].Type == corev1.DisruptionTarget {
			condition = &low.Status.Conditions[i]
		}
	}
	if condition == nil || condition.Status != corev1.ConditionTrue || condition.Reason != "TerminationByKubelet" ||
		condition.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("DisruptionTarget = %+v, want the kubelet's", condition)
	}
	if event := <-recorder.Events; event != "Normal Shutdown Shutdown manager detected shutdown event" {
		t.Errorf("event %q, want the kubelet's", event)
	}

	logind.events <- false
	logind.taken(t, 1)
	if event := <-recorder.Events; event != "Normal Shutdown Shutdown manager detected shutdown cancellation" {
		t.Errorf("event %q, want the kubelet's", event)
	}
	if err := m.ShutdownStatus(); err != nil {
		t.Errorf("ShutdownStatus after the cancellation = %v, want none", err)
	}
	if r := m.Admit(); !r.Admit {
		t.Errorf("Admit after the cancellation = %+v", r)
	}
	if _, ok := m.Order("low"); ok {
		t.Error("the orders outlived the cancellation")
	}
	stopManager()
	logind.released(t, 1)
}

func TestShutdownBandTimesOut(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(pod("slow", 0, 30, corev1.PodRunning), pod("next", 10, 30, corev1.PodRunning)).
		WithStatusSubresource(&corev1.Pod{}).Build()
	logind := &fakeLogind{delay: time.Hour, events: make(chan bool)}
	var mu sync.Mutex
	var at []time.Time
	m := New(c, Options{
		Bands:    []Band{{Priority: 0, ShutdownGracePeriodSeconds: 1}, {Priority: 10, ShutdownGracePeriodSeconds: 1}},
		NodeName: "n",
		Connect:  func() (Logind, error) { return logind, nil },
		// A reconciler that never gets the pods stopped.
		Enqueue:  func(string, string, types.UID) { mu.Lock(); at = append(at, time.Now()); mu.Unlock() },
		Recorder: record.NewFakeRecorder(10),
	})
	startManager(t, m)
	logind.events <- true
	logind.released(t, 0)
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 {
		t.Fatalf("%d pods ordered stopped, want 2", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < time.Second {
		t.Errorf("the second band began %v after the first, before the first's 1s was up", gap)
	}
	if d := logind.written(); d != 0 {
		t.Errorf("the drop-in was written (%v) though logind's delay was long enough", d)
	}
}

func TestWithoutLogindGracefulShutdownIsOff(t *testing.T) {
	m := New(fake.NewClientBuilder().Build(), Options{
		Bands:   []Band{{Priority: 0, ShutdownGracePeriodSeconds: 10}},
		Connect: func() (Logind, error) { return nil, errors.New("no system bus") },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v, want nodelet to run on", err)
	}
	if m.ShuttingDown() || !m.Admit().Admit {
		t.Error("a manager without logind refuses pods")
	}
}

func TestInhibitDelayNotRaised(t *testing.T) {
	logind := &fakeLogind{delay: 5 * time.Second}
	m := New(fake.NewClientBuilder().Build(), Options{
		Bands:   []Band{{Priority: 0, ShutdownGracePeriodSeconds: 10}},
		Connect: func() (Logind, error) { return logind, nil },
	})
	_, _, err := m.connect(context.Background(), m.log(context.Background()))
	if err == nil || !strings.Contains(err.Error(), "waiting for logind InhibitDelayMaxSec to update to 10s (ShutdownGracePeriod), current value is 5s") {
		t.Errorf("connect = %v, want the kubelet's timeout", err)
	}
	if d := logind.written(); d != 10*time.Second {
		t.Errorf("drop-in = %v, want 10s", d)
	}
	if logind.lock(0) != nil {
		t.Error("a lock was taken though logind would not wait long enough")
	}
}

// startManager runs m until stop is called, or the test ends, and then
// checks what Start returned once its context ended.
func startManager(t *testing.T, m *Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Start = %v after its context ended", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
