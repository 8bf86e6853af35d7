package evictionmanager

// Local storage: folders measured on the real file system of
// t.TempDir(); the limit evictions with a controller-runtime fake client
// for the Pods, a fake event recorder and a stub StatsService.

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/resources/eviction"
)

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLocalStorageMeterMeasuresLogsAndDiskVolumes(t *testing.T) {
	root := t.TempDir()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "empty", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}},
		}},
	}
	volumeDir := func(uid types.UID, vol *corev1.Volume) (string, bool) {
		return filepath.Join(root, "pods", string(uid), vol.Name), true
	}
	logDir := filepath.Join(root, "logs", "ns_web_uid")
	writeFile(t, filepath.Join(root, "pods", "uid", "scratch", "a"), 1<<20)
	writeFile(t, filepath.Join(root, "pods", "uid", "scratch", "sub", "b"), 1<<20)
	// A secret is on tmpfs: never measured, whatever its folder holds.
	writeFile(t, filepath.Join(root, "pods", "uid", "token", "t"), 1<<20)
	writeFile(t, filepath.Join(logDir, "app", "0.log"), 256<<10)
	writeFile(t, filepath.Join(logDir, "app", "1.log"), 256<<10)

	local, err := LocalStorageMeter{PodLogDir: func(*corev1.Pod) string { return logDir }, VolumeDir: volumeDir}.Measure(pod)
	if err != nil {
		t.Fatal(err)
	}
	// Two 1Mi files, plus the folders' own blocks; the emptyDir not made
	// yet takes nothing.
	if got := local.Volumes["scratch"]; got.Bytes < 2<<20 || got.Bytes > 2<<20+64<<10 || got.Inodes != 4 {
		t.Errorf("scratch takes %+v, want about 2Mi in 4 inodes", got)
	}
	if got, ok := local.Volumes["empty"]; !ok || got != (eviction.DiskUsage{}) {
		t.Errorf("the volume not made yet takes %+v (measured: %v), want nothing", got, ok)
	}
	if _, ok := local.Volumes["token"]; ok {
		t.Errorf("the secret volume was measured")
	}
	if got := local.Logs["app"]; got.Bytes < 512<<10 || got.Bytes > 512<<10+64<<10 || got.Inodes != 3 {
		t.Errorf("app's logs take %+v, want about 512Ki in 3 inodes", got)
	}
}

func TestAPodOverItsEmptyDirSizeLimitIsEvicted(t *testing.T) {
	withLimit := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "filler", UID: "filler"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Mi"))}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	// Uses as much, but has no limit.
	without := withLimit.DeepCopy()
	without.Name, without.UID, without.Spec.Volumes[0].EmptyDir.SizeLimit = "bystander", "bystander", nil
	c := fake.NewClientBuilder().WithObjects(withLimit, without).WithStatusSubresource(&corev1.Pod{}).Build()
	recorder := record.NewFakeRecorder(10)
	m := New(c, fakeStats{}, nil, Options{
		NodeName: "node",
		RootDir:  t.TempDir(),
		LocalStorage: func(*corev1.Pod) (eviction.LocalStorage, error) {
			return eviction.LocalStorage{Volumes: map[string]eviction.DiskUsage{"scratch": {Bytes: 2 << 20}}}, nil
		},
		Recorder: recorder,
		Clock:    clock.RealClock{},
		Log:      logr.Discard(),
	})

	evictions := kubeletmetrics.Evictions.WithLabelValues("emptydirfs.limit")
	before := testutil.ToFloat64(evictions)
	m.synchronize(context.Background())

	if n := testutil.ToFloat64(evictions) - before; n != 1 {
		t.Errorf(`kubelet_evictions{eviction_signal="emptydirfs.limit"} rose by %v, want 1`, n)
	}
	const want = `Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". `
	order, ok := m.Eviction("filler")
	if !ok || order.Reason != "Evicted" || order.Message != want || order.GracePeriodSeconds != 1 {
		t.Errorf("filler's eviction = %+v (ordered: %v), want Evicted with %q in 1s", order, ok, want)
	}
	if _, ok := m.Eviction("bystander"); ok {
		t.Errorf("the pod without a limit was evicted")
	}
	select {
	case event := <-recorder.Events:
		if !strings.HasPrefix(event, "Warning Evicted "+want) {
			t.Errorf("event %q, want the Evicted warning with %q", event, want)
		}
	default:
		t.Errorf("no event")
	}
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(withLimit), got); err != nil {
		t.Fatal(err)
	}
	// The kubelet sets no DisruptionTarget for a pod over its own limits:
	// the failure is the pod's, not a disruption (a Job's podFailurePolicy
	// counts it against its backoffLimit).
	for _, condition := range got.Status.Conditions {
		if condition.Type == corev1.DisruptionTarget {
			t.Errorf("DisruptionTarget condition %+v, want none for a pod over its own limit", condition)
		}
	}
}

func TestACrashLoopingPodIsNotEvictedForItsDeadInstances(t *testing.T) {
	limited := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:      "app",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("10Mi")}},
			}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	// Four dead instances of 8Mi each and the running one of 1Mi: 33Mi
	// of layers, 1Mi of them the pod's.
	crashLooping, filler := limited("crash-looping"), limited("filler")
	stats := fakeStats{running: []string{"crash-looping-4", "filler-0"}}
	for i := range 4 {
		stats.stats = append(stats.stats, containerStat("crash-looping-"+strconv.Itoa(i), "crash-looping", "app", 0, 8<<20))
	}
	stats.stats = append(stats.stats,
		containerStat("crash-looping-4", "crash-looping", "app", 1<<20, 1<<20),
		// Over its limit with its running instance.
		containerStat("filler-0", "filler", "app", 1<<20, 11<<20))
	c := fake.NewClientBuilder().WithObjects(crashLooping, filler).WithStatusSubresource(&corev1.Pod{}).Build()
	m := New(c, stats, nil, Options{
		NodeName:     "node",
		RootDir:      t.TempDir(),
		LocalStorage: func(*corev1.Pod) (eviction.LocalStorage, error) { return eviction.LocalStorage{}, nil },
		Recorder:     record.NewFakeRecorder(10),
		Clock:        clock.RealClock{},
		Log:          logr.Discard(),
	})

	m.synchronize(context.Background())

	if order, ok := m.Eviction("crash-looping"); ok {
		t.Errorf("the crash-looping pod was evicted (%s) for its dead instances' layers", order.Message)
	}
	const want = `Pod ephemeral local storage usage exceeds the total limit of containers 10Mi. `
	if order, ok := m.Eviction("filler"); !ok || order.Message != want {
		t.Errorf("filler's eviction = %+v (ordered: %v), want %q", order, ok, want)
	}
}
