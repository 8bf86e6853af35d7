package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodelet/nodelet/internal/pod/podstart"
	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/test/e2e/startcheck"
)

// TestStartBreakdownAddsUpToCreateToReady starts pods one at a time and
// checks nodelet's account of each start (its "Pod started" log line)
// against the same start in the API server's audit log: the steps add up
// to the total, the steps every start has are there in their order, and
// the breakdown runs from the pod's creation to the API server answering
// the status patch that made the pod Ready. No bound depends on how fast
// or busy the machine is; startcheck.Problems says why, what each catches,
// and why none limits how long after that answer the breakdown ends,
// which the test logs for each pod.
//
// The end is read from the audit log rather than from a watch in this
// process, which would add this process's own delays on a busy machine.
// The pods are created one at a time and the logs read once every pod has
// started, and the test runs alone, so that the starts it logs are not
// slowed by itself or by other tests.
func TestStartBreakdownAddsUpToCreateToReady(t *testing.T) {
	ns := f.NewNamespace(t)
	var pods []*corev1.Pod
	for i := range 4 {
		pods = append(pods, createAndWaitReady(t, newPod(ns, fmt.Sprintf("traced-%d", i)).obj()))
	}
	// Every step of a start: each of these pods goes through all of them.
	var want []string
	for _, m := range []podstart.Mark{{Step: podstart.StepSeen}, {Step: podstart.StepAdmitted}, {Step: podstart.StepVolumesReady},
		{Step: podstart.StepEnvReady}, {Step: podstart.StepSandboxTurn}, {Step: podstart.StepSandboxCreated},
		{Step: podstart.StepImageReady, Container: "app"}, {Step: podstart.StepContainerCreated, Container: "app"},
		{Step: podstart.StepContainerStarted, Container: "app"}, {Step: podstart.StepReady}, {Step: podstart.StepStatusWritten}} {
		want = append(want, m.Name())
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
		told, err := startcheck.Parse(line.Total, line.Steps)
		if err != nil {
			t.Fatalf("pod %s: Pod started line: %v", name, err)
		}
		created := pod.CreationTimestamp.Time
		seen := startcheck.Seen{Received: readyPatch.ReceivedAt.Sub(created), Answered: readyPatch.AnsweredAt.Sub(created)}
		for _, problem := range startcheck.Problems(told, seen, want) {
			t.Errorf("pod %s: %s (steps %s)", name, problem, line.Steps)
		}
		t.Logf("pod %s: breakdown %s; the API server received the Ready patch %s after creation, answered it %s later, and the breakdown ends %s after that answer: %s",
			name, told.Total, seen.Received.Round(time.Microsecond), (seen.Answered - seen.Received).Round(time.Microsecond),
			(told.Total - seen.Answered).Round(time.Microsecond), line.Steps)
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
