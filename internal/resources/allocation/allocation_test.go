package allocation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func cpu(v string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
}

func testPod() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{}
	pod.UID = "uid-1"
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "setup", Resources: cpu("1")},
		{Name: "proxy", Resources: cpu("100m"), RestartPolicy: &always},
	}
	pod.Spec.Containers = []corev1.Container{{Name: "app", Resources: cpu("200m")}}
	return pod
}

func TestFromPodKeepsResizableContainers(t *testing.T) {
	got := FromPod(testPod())
	want := PodAllocation{Containers: map[string]corev1.ResourceRequirements{"proxy": cpu("100m"), "app": cpu("200m")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FromPod (-want +got):\n%s", diff)
	}
}

func TestApply(t *testing.T) {
	pod := testPod()
	a := FromPod(pod)
	if got, updated := Apply(pod, a); updated || got != pod {
		t.Errorf("Apply of the pod's own allocation updated it")
	}
	resized := testPod()
	resized.Spec.Containers[0].Resources = cpu("500m")
	resized.Spec.InitContainers[1].Resources = cpu("50m")
	got, updated := Apply(resized, a)
	if !updated {
		t.Fatal("Apply of an older allocation did not update the pod")
	}
	if diff := cmp.Diff(pod.Spec, got.Spec); diff != "" {
		t.Errorf("Apply gave the spec (-want +got):\n%s", diff)
	}
	if q := resized.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "500m" {
		t.Errorf("Apply changed the pod it was given: app asks %s", q.String())
	}
}

func TestStoreSurvivesReopening(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pod := testPod()
	if err := s.Set(pod.UID, FromPod(pod)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetResized(pod.UID, map[string]corev1.ResourceRequirements{"c1": cpu("300m")}, []string{"c1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("uid-2", FromPod(testPod())); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(func(uid types.UID) bool { return uid != "uid-2" }); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := again.Get(pod.UID)
	if !ok || !got.SameAs(FromPod(pod)) {
		t.Errorf("reopened allocation %+v (%v), want %+v", got, ok, FromPod(pod))
	}
	if r, ok := again.Resized(pod.UID, "c1"); !ok || !r.Requests.Cpu().Equal(resource.MustParse("300m")) {
		t.Errorf("reopened resized record %v (%v), want 300m", r, ok)
	}
	if _, ok := again.Get("uid-2"); ok {
		t.Error("a removed pod's allocation came back")
	}
	// A resize recorded later drops the records of instances gone.
	if err := again.SetResized(pod.UID, map[string]corev1.ResourceRequirements{"c2": cpu("400m")}, []string{"c2"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Resized(pod.UID, "c1"); ok {
		t.Error("the record of a gone instance was kept")
	}
}

func TestStoreRefusesADamagedFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err == nil {
		t.Error("Open read a damaged file")
	}
	if err := s.Set("uid-1", FromPod(testPod())); err != nil {
		t.Fatalf("the store of a damaged file is not usable: %v", err)
	}
	if _, err := Open(dir); err != nil {
		t.Errorf("the file written over the damaged one does not read: %v", err)
	}
}

// Changes made while the file is being written wait and go to it in one
// write, each returning once the file holds it; a write that fails is
// taken again by the next change waiting.
func TestChangesWaitingForAWriteShareTheNext(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	writes, started, release := holdFirstWriteThenFail(s)

	first := make(chan error, 1)
	go func() { first <- s.Set("uid-0", FromPod(testPod())) }()
	<-started
	const waiting = 4
	done := make(chan error, waiting)
	for i := 1; i <= waiting; i++ {
		go func() { done <- s.Set(types.UID(fmt.Sprintf("uid-%d", i)), FromPod(testPod())) }()
	}
	// Reads go on while the file is written.
	await.Eventually(t, 10*time.Second, "every change made in memory while the first write is held", func(context.Context) error {
		if n := len(s.UIDs()); n != waiting+1 {
			return fmt.Errorf("%d pods in memory", n)
		}
		return nil
	})
	close(release)
	if err := <-first; err == nil {
		t.Error("the change whose write failed returned no error")
	}
	for range waiting {
		if err := <-done; err != nil {
			t.Errorf("a change waiting for the failed write: %v", err)
		}
	}
	if got := writes.Load(); got != 2 {
		t.Errorf("%d writes, want 2: the failed one, then one for all that waited", got)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(again.UIDs()); got != waiting+1 {
		t.Errorf("the file holds %d pods, want %d: the one whose write failed with those written after", got, waiting+1)
	}
}

// A change the store holds already returns once the file holds it too:
// when the write that was to carry it fails, the repeated change writes
// it.
func TestARepeatedChangeWaitsForTheFileToHoldIt(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, started, release := holdFirstWriteThenFail(s)
	first := make(chan error, 1)
	go func() { first <- s.Set("uid-0", FromPod(testPod())) }()
	<-started
	repeated := make(chan error, 1)
	go func() { repeated <- s.Set("uid-0", FromPod(testPod())) }()
	close(release)
	if err := <-first; err == nil {
		t.Error("the change whose write failed returned no error")
	}
	if err := <-repeated; err != nil {
		t.Errorf("the repeated change: %v", err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := again.Get("uid-0"); !ok {
		t.Error("the repeated change returned with the file not holding it")
	}
}

// holdFirstWriteThenFail has the store's first write wait, once started,
// until release is closed, and then fail; the later ones write. writes
// counts them all.
func holdFirstWriteThenFail(s *Store) (writes *atomic.Int32, started, release chan struct{}) {
	writes = &atomic.Int32{}
	started, release = make(chan struct{}), make(chan struct{})
	write := s.writeFile
	s.writeFile = func(path string, data []byte, perm os.FileMode) error {
		if writes.Add(1) == 1 {
			close(started)
			<-release
			return errors.New("disk full")
		}
		return write(path, data, perm)
	}
	return writes, started, release
}
