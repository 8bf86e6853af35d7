package evictionmanager

// A companion node's share of nodefs and its pod cgroup's PID limit: the
// Pods in a controller-runtime fake client, a stub StatsService, the pids
// files in t.TempDir().

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nodelet/nodelet/internal/resources/eviction"
)

// TestNodeFsShareIsThePodsUseOfTheShare: with a share of nodefs, the
// pods' writable layers, logs and local volumes count against the share,
// whatever the disk has free: 10% of a 64Mi share is met when the pods
// use 60Mi, and the node reports DiskPressure.
func TestNodeFsShareIsThePodsUseOfTheShare(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "filler", UID: "filler"},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	c := fake.NewClientBuilder().WithObjects(pod).WithStatusSubresource(&corev1.Pod{}).Build()
	stats := fakeStats{stats: []*runtimeapi.ContainerStats{containerStat("filler-0", "filler", "app", 1<<20, 40<<20)}, running: []string{"filler-0"}}
	m := New(c, stats, nil, Options{
		Config: eviction.Config{Thresholds: []eviction.Threshold{{
			Signal: eviction.SignalNodeFsAvailable, Operator: eviction.OpLessThan, Value: eviction.ThresholdValue{Percentage: 0.1},
		}}, PressureTransitionPeriod: time.Minute},
		NodeName:         "node",
		RootDir:          t.TempDir(),
		NodeFsShareBytes: 64 << 20,
		LocalStorage: func(*corev1.Pod) (eviction.LocalStorage, error) {
			return eviction.LocalStorage{Volumes: map[string]eviction.DiskUsage{"scratch": {Bytes: 20 << 20}}}, nil
		},
		Recorder: record.NewFakeRecorder(10),
		Clock:    clock.RealClock{},
		Log:      logr.Discard(),
	})

	obs := m.observe(context.Background(), m.opts.Clock.Now(), []*corev1.Pod{pod})
	got := obs[eviction.SignalNodeFsAvailable]
	if got.Capacity.Value() != 64<<20 || got.Available.Value() != 4<<20 {
		t.Errorf("nodefs.available = %s of %s, want 4Mi of the 64Mi share", &got.Available, &got.Capacity)
	}
	m.synchronize(context.Background())
	if conditions := m.PressureConditions(); len(conditions) != 1 || conditions[0] != corev1.NodeDiskPressure {
		t.Errorf("PressureConditions() = %v, want DiskPressure", conditions)
	}
}

// TestPIDShareIsThePodCgroups: with the pod cgroup's limit, pid.available
// is that limit less the tasks in the cgroup, not the machine's.
func TestPIDShareIsThePodCgroups(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pids.current"), []byte("96\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := New(fake.NewClientBuilder().Build(), fakeStats{}, nil, Options{
		NodeName: "node", RootDir: t.TempDir(), PIDCgroupDir: dir, MaxPID: 4096,
		Recorder: record.NewFakeRecorder(10), Clock: clock.RealClock{}, Log: logr.Discard(),
	})
	got := m.observe(context.Background(), m.opts.Clock.Now(), nil)[eviction.SignalPIDAvailable]
	if got.Capacity.Value() != 4096 || got.Available.Value() != 4000 {
		t.Errorf("pid.available = %s of %s, want 4000 of the pod cgroup's 4096", &got.Available, &got.Capacity)
	}
}
