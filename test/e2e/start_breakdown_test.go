package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodelet/nodelet/internal/await"
)

// TestStartBreakdownAddsUpToCreateToReady starts pods one at a time and
// checks nodelet's account of each start (its "Pod started" log line)
// against the start measured from outside: the steps add up to the total,
// and the total is the time from the pod's creation to the API server
// storing it Ready, within 5%. It times what it checks, so it runs alone.
//
// The end is taken from the API server's audit log, on its clock: when it
// answered the status patch that made the pod Ready. A watch in this
// process would add this process's own delays on a busy machine (a
// moment without the CPU is a few percent of a start) to one side only.
// For the same reason the logs are read once every pod has started: read
// as a pod becomes Ready, they would take the CPU from the node's
// processes while nodelet reads the API server's answer, the one moment
// only nodelet's side counts.
func TestStartBreakdownAddsUpToCreateToReady(t *testing.T) {
	ns := f.NewNamespace(t)
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, createAndWaitReady(t, newPod(ns, fmt.Sprintf("traced-%d", i)).obj()))
	}
	for _, pod := range pods {
		name := pod.Name
		var line startedLine
		await.Eventually(t, 30*time.Second, "nodelet's Pod started line of "+name, func(ctx context.Context) error {
			return findStartedLine(ns, name, &line)
		})
		var readyPatch auditEvent
		await.Eventually(t, 30*time.Second, "the audit log's status patch making "+name+" Ready", func(ctx context.Context) error {
			var err error
			readyPatch, err = f.readyPatch(t, ns, name)
			return err
		})
		created := pod.CreationTimestamp.Time
		measured := readyPatch.AnsweredAt.Sub(created)
		total, err := time.ParseDuration(line.Total)
		if err != nil {
			t.Fatalf("pod %s: total %q: %v", name, line.Total, err)
		}
		var sum time.Duration
		var names []string
		for _, step := range strings.Fields(line.Steps) {
			stepName, took, ok := strings.Cut(step, "=")
			d, err := time.ParseDuration(took)
			if !ok || err != nil {
				t.Fatalf("pod %s: step %q of %q", name, step, line.Steps)
			}
			names = append(names, stepName)
			sum += d
		}
		// Each step is rounded to the millisecond.
		if diff := (sum - total).Abs(); diff > time.Duration(len(names))*time.Millisecond {
			t.Errorf("pod %s: steps add up to %s, total %s (%s)", name, sum, total, line.Steps)
		}
		// Where the patch's time went, when the two ends are apart: the
		// API server's handling, and before and after it.
		patch := fmt.Sprintf("the Ready patch received %s after creation, answered %s later",
			readyPatch.ReceivedAt.Sub(created).Round(time.Millisecond), readyPatch.AnsweredAt.Sub(readyPatch.ReceivedAt.Time).Round(time.Millisecond))
		if diff := (total - measured).Abs(); diff > measured/20 {
			t.Errorf("pod %s: breakdown total %s, measured create→Ready %s: more than 5%% apart (%s; %s)", name, total, measured, line.Steps, patch)
		}
		for _, want := range []string{"seen", "sandbox_created", "image_ready/app", "container_started/app", "status_written"} {
			if !slices.Contains(names, want) {
				t.Errorf("pod %s: no step %s in %q", name, want, line.Steps)
			}
		}
		t.Logf("pod %s: measured %s, breakdown %s: %s; %s", name, measured, total, line.Steps, patch)
	}
	f.auditLogIsWhole(t)
}

// createAndWaitReady creates pod and returns it as a watch first shows it
// Ready. A start is counted from the pod's creation timestamp, the one
// origin nodelet can count it from too (the pod was made elsewhere); the
// API server keeps it to the second, so the pod is created just after a
// second begins, where the timestamp is its creation to within the Create
// call's few milliseconds.
func createAndWaitReady(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	w, err := f.Client.CoreV1().Pods(pod.Namespace).Watch(t.Context(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
	})
	if err != nil {
		t.Fatalf("watching pod %s: %v", pod.Name, err)
	}
	defer w.Stop()
	// Not a wait for anything: the create is placed on the clock.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 2*time.Millisecond)))
	f.createPod(t, pod)
	deadline := time.After(podStartTimeout)
	for {
		select {
		case event, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of pod %s ended", pod.Name)
			}
			if event.Type == watch.Error {
				t.Fatalf("watching pod %s: %v", pod.Name, event.Object)
			}
			if p, ok := event.Object.(*corev1.Pod); ok && podReady(p) {
				return p
			}
		case <-deadline:
			t.Fatalf("pod %s not Ready within %s", pod.Name, podStartTimeout)
		}
	}
}

// readyPatch is the audit event of the node's status patch that made pod
// name Ready: the first that sets its Ready condition True (the stack's
// audit policy logs the node's status patches with their bodies).
func (f *Framework) readyPatch(t *testing.T, ns, name string) (auditEvent, error) {
	for _, e := range f.nodeAuditEvents(t, ns) {
		if e.Verb != "patch" || e.ObjectRef.Resource != "pods" || e.ObjectRef.Subresource != "status" || e.ObjectRef.Name != name {
			continue
		}
		if len(e.RequestObject) == 0 {
			t.Fatalf("the audit log holds no body of the node's status patch of %s/%s: the stack's audit policy must log them at level Request", ns, name)
		}
		var patch corev1.Pod
		if err := json.Unmarshal(e.RequestObject, &patch); err != nil {
			t.Fatalf("status patch of %s/%s in the audit log: %v", ns, name, err)
		}
		if podReady(&patch) {
			return e, nil
		}
	}
	return auditEvent{}, fmt.Errorf("no status patch making %s/%s Ready in the audit log yet", ns, name)
}

// startedLine is what a "Pod started" line of nodelet's JSON log holds.
type startedLine struct {
	Msg string `json:"msg"`
	Pod struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"pod"`
	Total string `json:"total"`
	Steps string `json:"steps"`
}

func findStartedLine(ns, name string, into *startedLine) error {
	for _, raw := range strings.Split(f.Nodelet.LogLines(ns, 500), "\n") {
		var line startedLine
		if json.Unmarshal([]byte(raw), &line) != nil {
			continue
		}
		if line.Msg == "Pod started" && line.Pod.Namespace == ns && line.Pod.Name == name {
			*into = line
			return nil
		}
	}
	return fmt.Errorf("no Pod started line for %s/%s in nodelet's log", ns, name)
}
