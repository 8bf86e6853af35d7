package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The TestPodUserNamespace tests need a runtime that gives pods user
// namespaces (containerd 2 with runc 1.2+): hack/test.sh runs them, alone,
// on a stack of their own (its userns mode, RUNTIME=containerd2), and
// leaves them out of the others, whose containerd 1.6 cannot.

// idsPerPod is how many IDs each pod's user namespace maps.
const idsPerPod = 65536

// usernsFSGroup is the fsGroup of usernsPod.
const usernsFSGroup = 1234

// usernsPod is a pod in its own user namespace whose app container runs
// until /tmp/stop exists, with an emptyDir at /data owned by its fsGroup.
func usernsPod(ns, name string) *corev1.Pod {
	return newPod(ns, name).withShell("until [ -e /tmp/stop ]; do sleep 1; done").with(func(p *corev1.Pod) {
		p.Spec.HostUsers = ptr.To(false)
		p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](usernsFSGroup)}
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}).obj()
}

// podIDMap reads /proc/self/uid_map and gid_map in the pod's app
// container, checks they map the same one range of idsPerPod IDs from ID
// 0, and returns its first host ID.
func (f *Framework) podIDMap(t *testing.T, pod *corev1.Pod) uint32 {
	t.Helper()
	uidMap := f.execInContainer(t, pod, "app", "cat", "/proc/self/uid_map")
	gidMap := f.execInContainer(t, pod, "app", "cat", "/proc/self/gid_map")
	var inside, host, length uint32
	if n, err := fmt.Sscan(uidMap, &inside, &host, &length); n != 3 || err != nil || strings.Count(strings.TrimSpace(uidMap), "\n") != 0 {
		t.Fatalf("uid_map of %s/%s = %q, want one line of three numbers", pod.Namespace, pod.Name, uidMap)
	}
	if inside != 0 || length != idsPerPod || host < idsPerPod || host%idsPerPod != 0 {
		t.Errorf("uid_map of %s/%s = %q, want %d IDs from 0 onto a range of the host's past its first %d", pod.Namespace, pod.Name, uidMap, idsPerPod, idsPerPod)
	}
	if strings.Fields(gidMap)[1] != strings.Fields(uidMap)[1] || strings.Fields(gidMap)[2] != strings.Fields(uidMap)[2] {
		t.Errorf("gid_map of %s/%s = %q, want the uid_map's range %q", pod.Namespace, pod.Name, gidMap, uidMap)
	}
	return host
}

// podRangeFile is the pod's range as nodelet keeps it in the pod's folder.
func (f *Framework) podRangeFile(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.podDir(pod), "userns"))
	if err != nil {
		t.Fatalf("the user namespace file of %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return string(data)
}

// TestPodUserNamespaceRangesAreThePodsOwnAndSurviveARestart kills
// nodelet, so it runs alone: it does not call t.Parallel.
func TestPodUserNamespaceRangesAreThePodsOwnAndSurviveARestart(t *testing.T) {
	ns := f.NewNamespace(t)
	a := f.waitForPod(t, f.createPod(t, usernsPod(ns, "a")), podStartTimeout, "to be Running and Ready", runningAndReady)
	b := f.waitForPod(t, f.createPod(t, usernsPod(ns, "b")), podStartTimeout, "to be Running and Ready", runningAndReady)
	hostA, hostB := f.podIDMap(t, a), f.podIDMap(t, b)
	if hostA == hostB {
		t.Fatalf("pods a and b both map host IDs from %d, want disjoint ranges", hostA)
	}
	if want := fmt.Sprintf(`"hostId":%d`, hostA); !strings.Contains(f.podRangeFile(t, a), want) {
		t.Errorf("a's user namespace file %q does not hold %s", f.podRangeFile(t, a), want)
	}

	// Volumes are idmapped as the namespace is: the pod's root writes a
	// file the host sees owned by its own root, not by the pod's range,
	// and the fsGroup is the same group inside and on the host.
	f.execInContainer(t, a, "app", "touch", "/data/written")
	want := fmt.Sprintf("0:%d", usernsFSGroup)
	if got := strings.TrimSpace(f.execInContainer(t, a, "app", "stat", "-c", "%u:%g", "/data/written")); got != want {
		t.Errorf("the file a's root wrote in its emptyDir is owned by %s inside, want %s (root, the fsGroup)", got, want)
	}
	matches, err := filepath.Glob(filepath.Join(f.podDir(a), "volumes", "*", "data", "written"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("the file a wrote in its emptyDir, on the host: %v, %v", matches, err)
	}
	info, err := os.Stat(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	if st := info.Sys().(*syscall.Stat_t); fmt.Sprintf("%d:%d", st.Uid, st.Gid) != want {
		t.Errorf("the file a's root wrote in its emptyDir is owned by %d:%d on the host, want %s (an idmapped mount)", st.Uid, st.Gid, want)
	}

	// A restarted nodelet reads the ranges back: a's container, started
	// again by it, gets a's range, and a new pod gets neither a's nor b's.
	if err := f.Nodelet.Kill(); err != nil {
		t.Fatalf("killing nodelet: %v", err)
	}
	f.restartNodelet(t)
	f.execInContainer(t, a, "app", "touch", "/tmp/stop")
	a = f.waitForPod(t, a, podStartTimeout, "to run its app container again", func(p *corev1.Pod) (bool, error) {
		s := containerStatus(p, "app")
		return s != nil && s.RestartCount == 1 && s.State.Running != nil, nil
	})
	if got := f.podIDMap(t, a); got != hostA {
		t.Errorf("a's container started after the restart maps host IDs from %d, want a's range from %d", got, hostA)
	}
	c := f.waitForPod(t, f.createPod(t, usernsPod(ns, "c")), podStartTimeout, "to be Running and Ready", runningAndReady)
	hostC := f.podIDMap(t, c)
	if hostC == hostA || hostC == hostB {
		t.Errorf("pod c, made after the restart, maps host IDs from %d, one of a's (%d) and b's (%d)", hostC, hostA, hostB)
	}

	// A pod's range goes with it: its file with its folder, and the range
	// is free for the next pod (the lowest free range is handed out).
	f.deletePod(t, b, nil)
	f.waitForPodGone(t, b, podStartTimeout)
	if err := await.Poll(t.Context(), time.Minute, await.Condition(func(context.Context) (bool, error) {
		_, err := os.Stat(f.podDir(b))
		return os.IsNotExist(err), nil
	})); err != nil {
		t.Fatalf("b's folder %s is still there a minute after b went: %v", f.podDir(b), err)
	}
	d := f.waitForPod(t, f.createPod(t, usernsPod(ns, "d")), podStartTimeout, "to be Running and Ready", runningAndReady)
	if got := f.podIDMap(t, d); got != hostB {
		t.Errorf("pod d, made after b went, maps host IDs from %d, want b's freed range from %d", got, hostB)
	}
}
