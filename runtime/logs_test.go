package runtime

// Tests of container log files and their links, on real files in
// t.TempDir().

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type logTestEnv struct {
	m         *Manager
	podLogDir string
	linkDir   string
}

func newLogTestEnv(t *testing.T) *logTestEnv {
	dir := t.TempDir()
	config := Config{PodLogDir: filepath.Join(dir, "pods"), ContainerLogDir: filepath.Join(dir, "containers")}
	return &logTestEnv{m: &Manager{config: config}, podLogDir: config.PodLogDir, linkDir: config.ContainerLogDir}
}

// writeLog makes a container instance's log file as the runtime would, and
// returns the pod's log folder and the file's path relative to it.
func (e *logTestEnv) writeLog(t *testing.T, pod *corev1.Pod, container string, restartCount int) (string, string) {
	t.Helper()
	podDir := podLogDir(e.podLogDir, pod.Namespace, pod.Name, pod.UID)
	logPath := containerLogPath(container, restartCount)
	if err := ensureDir(containerLogDir(podDir, container)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(podDir, logPath), []byte("2026-11-22T01:19:08.29Z stdout F hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return podDir, logPath
}

func (e *logTestEnv) links(t *testing.T) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(e.linkDir)
	if os.IsNotExist(err) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{}
	for _, entry := range entries {
		target, err := os.Readlink(filepath.Join(e.linkDir, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		links[entry.Name()] = target
	}
	return links
}

func logTestPod(name string, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid}}
}

func TestLinkContainerLog(t *testing.T) {
	e := newLogTestEnv(t)
	pod := logTestPod("web", "uid-1")
	podDir, logPath := e.writeLog(t, pod, "app", 0)

	e.m.linkContainerLog(context.Background(), pod, "app", "abc123", podDir, logPath)
	// Linking again (a retried sync) is harmless.
	e.m.linkContainerLog(context.Background(), pod, "app", "abc123", podDir, logPath)
	// A log file the runtime never wrote gets no link.
	e.m.linkContainerLog(context.Background(), pod, "other", "def456", podDir, "other/0.log")

	want := map[string]string{"web_default_app-abc123.log": filepath.Join(podDir, "app", "0.log")}
	if diff := cmp.Diff(want, e.links(t)); diff != "" {
		t.Errorf("links mismatch (-want +got):\n%s", diff)
	}
	content, err := os.ReadFile(filepath.Join(e.linkDir, "web_default_app-abc123.log"))
	if err != nil || !strings.Contains(string(content), "hello") {
		t.Errorf("reading through the link = %q, %v, want the log", content, err)
	}
}

func TestContainerLogLinkFitsAFileName(t *testing.T) {
	link := containerLogLink("/logs", strings.Repeat("p", 200), "default", "app", strings.Repeat("c", 64))
	name := filepath.Base(link)
	if len(name) != maxFileNameLength || !strings.HasSuffix(name, ".log") {
		t.Errorf("link name %q has %d characters, want %d ending in .log", name, len(name), maxFileNameLength)
	}
}

func TestRemoveContainerLog(t *testing.T) {
	e := newLogTestEnv(t)
	pod := logTestPod("web", "uid-1")
	podDir, logPath := e.writeLog(t, pod, "app", 0)
	e.m.linkContainerLog(context.Background(), pod, "app", "abc123", podDir, logPath)
	absolute := filepath.Join(podDir, logPath)
	// Files rotated from it, and the next instance's log, which stays.
	rotated := []string{absolute + ".20260101-000000.gz", absolute + ".20260101-000010"}
	next := filepath.Join(podDir, containerLogPath("app", 1))
	for _, path := range append(rotated, next) {
		if err := os.WriteFile(path, nil, 0o640); err != nil {
			t.Fatal(err)
		}
	}

	if err := e.m.removeContainerLog("app", "abc123", "web", "default", absolute); err != nil {
		t.Fatalf("removeContainerLog() error = %v", err)
	}
	for _, path := range append(rotated, absolute) {
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("log file %s still there: %v", path, err)
		}
	}
	if _, err := os.Stat(next); err != nil {
		t.Errorf("the next instance's log file is gone: %v", err)
	}
	if links := e.links(t); len(links) != 0 {
		t.Errorf("links left: %v", links)
	}
	// Removing what is already gone is not an error.
	if err := e.m.removeContainerLog("app", "abc123", "web", "default", absolute); err != nil {
		t.Errorf("removeContainerLog() again: error = %v", err)
	}
	if err := e.m.removeContainerLog("app", "abc123", "web", "default", "app/0.log"); err == nil {
		t.Errorf("removeContainerLog() with a relative path: no error, want one")
	}
}

func TestRemovePodLogs(t *testing.T) {
	e := newLogTestEnv(t)
	old := logTestPod("web", "uid-old")
	recreated := logTestPod("web", "uid-new")
	neighbour := logTestPod("web-2", "uid-2")
	for _, c := range []struct {
		pod *corev1.Pod
		id  string
	}{{old, "aaa"}, {recreated, "bbb"}, {neighbour, "ccc"}} {
		podDir, logPath := e.writeLog(t, c.pod, "app", 0)
		e.m.linkContainerLog(context.Background(), c.pod, "app", c.id, podDir, logPath)
	}

	if err := e.m.RemovePodLogs("default", "web", "uid-old"); err != nil {
		t.Fatalf("RemovePodLogs() error = %v", err)
	}
	if _, err := os.Stat(podLogDir(e.podLogDir, "default", "web", "uid-old")); !os.IsNotExist(err) {
		t.Errorf("pod log folder still there: %v", err)
	}
	var names []string
	for name := range e.links(t) {
		names = append(names, name)
	}
	sort.Strings(names)
	// The pod created again under the same name and its neighbour keep theirs.
	want := []string{"web-2_default_app-ccc.log", "web_default_app-bbb.log"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("links left mismatch (-want +got):\n%s", diff)
	}
	// A pod without logs has nothing to remove.
	if err := e.m.RemovePodLogs("default", "ghost", "uid-ghost"); err != nil {
		t.Errorf("RemovePodLogs() of a pod without logs: error = %v", err)
	}
}

func TestListPodLogs(t *testing.T) {
	e := newLogTestEnv(t)
	if got, err := e.m.ListPodLogs(); err != nil || len(got) != 0 {
		t.Fatalf("ListPodLogs() before any log = %v, %v; want none", got, err)
	}
	for _, pod := range []*corev1.Pod{logTestPod("web", "uid-1"), logTestPod("web-2", "uid-2")} {
		e.writeLog(t, pod, "app", 0)
	}
	// Not a pod's log folder: a file, and a folder named otherwise.
	if err := os.WriteFile(filepath.Join(e.podLogDir, "default_web_uid-3"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.podLogDir, "lost+found"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := e.m.ListPodLogs()
	if err != nil {
		t.Fatal(err)
	}
	// In the folders' order: "-" sorts before "_".
	want := []PodLogs{{Namespace: "default", Name: "web-2", UID: "uid-2"}, {Namespace: "default", Name: "web", UID: "uid-1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListPodLogs() (-want +got):\n%s", diff)
	}
}
