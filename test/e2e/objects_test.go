package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// Helpers for the tests of what pods are configured with: the objects they
// read, what their containers print, and the events nodelet records.

func (f *Framework) createConfigMap(t *testing.T, ns, name string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := f.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       data,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

func (f *Framework) createSecret(t *testing.T, ns string, secret *corev1.Secret) *corev1.Secret {
	t.Helper()
	created, err := f.Client.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Secret %s/%s: %v", ns, secret.Name, err)
	}
	return created
}

// containerLog is what a container instance printed to stdout, a line
// each, as the runtime wrote it to the pod's log folder.
func (f *Framework) containerLogLines(t *testing.T, pod *corev1.Pod, container string, restartCount int) []string {
	t.Helper()
	return readCRILog(t, filepath.Join(f.podLogDir(pod), container, fmt.Sprintf("%d.log", restartCount)))
}

// waitForLogLine waits until the container's first instance has printed a
// line that match accepts, and returns it.
func (f *Framework) waitForLogLine(t *testing.T, pod *corev1.Pod, container string, timeout time.Duration, what string, match func(line string) bool) string {
	t.Helper()
	var found string
	await.Eventually(t, timeout, fmt.Sprintf("container %s of pod %s to print %s", container, pod.Name, what), await.Condition(func(ctx context.Context) (bool, error) {
		for _, line := range f.containerLogLines(t, pod, container, 0) {
			if match(line) {
				found = line
				return true, nil
			}
		}
		return false, nil
	}))
	return found
}

// keyValues reads NAME=value lines (what env prints) into a map; other
// lines are left out.
func keyValues(lines []string) map[string]string {
	values := map[string]string{}
	for _, line := range lines {
		if name, value, ok := strings.Cut(line, "="); ok && name != "" && !strings.ContainsAny(name, " \t") {
			values[name] = value
		}
	}
	return values
}

// succeeded is a waitForPod condition for pods that run to completion.
func succeeded(pod *corev1.Pod) (bool, error) {
	return pod.Status.Phase == corev1.PodSucceeded, failedIfPhase(pod, corev1.PodFailed)
}

// waitingWith is a waitForPod condition: the container waits with reason,
// its message containing text.
func waitingWith(container, reason, text string) func(*corev1.Pod) (bool, error) {
	return func(pod *corev1.Pod) (bool, error) {
		s := containerStatus(pod, container)
		if s == nil || s.State.Waiting == nil {
			return false, nil
		}
		return s.State.Waiting.Reason == reason && strings.Contains(s.State.Waiting.Message, text), nil
	}
}

// logEntry is one stdout line of a container and when the runtime wrote it.
type logEntry struct {
	Time time.Time
	Line string
}

// containerLogEntries is containerLog with each line's time from the CRI
// log file, the node's clock, which the tests share.
func (f *Framework) containerLogEntries(t *testing.T, pod *corev1.Pod, container string) []logEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.podLogDir(pod), container, "0.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("reading container log: %v", err)
	}
	var entries []logEntry
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		fields := strings.SplitN(line, " ", 4)
		if len(fields) != 4 || fields[1] != "stdout" || fields[2] != "F" {
			continue
		}
		when, err := time.Parse(time.RFC3339Nano, fields[0])
		if err != nil {
			t.Fatalf("container log line %q: %v", line, err)
		}
		entries = append(entries, logEntry{Time: when, Line: fields[3]})
	}
	return entries
}
