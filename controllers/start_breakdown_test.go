package controllers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/pod/podstart"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestAStartIsExplainedStepByStep runs a pod against envtest and the CRI
// fake with a threshold every start exceeds: the SlowPodStart event lists
// the start's steps in order, from nodelet seeing the pod to its Ready
// status written, and the steps' histogram has them.
func TestAStartIsExplainedStepByStep(t *testing.T) {
	env := startReconcilerWith(t, func(r *PodReconciler) { r.SlowPodStartThreshold = time.Nanosecond })
	env.createNamespace(t, "breakdown")
	pod := testPod("breakdown", "web")
	if err := env.client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)

	var event string
	await.Eventually(t, 30*time.Second, "a SlowPodStart event", func(context.Context) error {
		for _, e := range env.recordedEvents() {
			if strings.HasPrefix(e, "Warning "+reasonSlowPodStart+" ") {
				event = e
				return nil
			}
		}
		return fmt.Errorf("events: %q", env.recordedEvents())
	})
	_, steps, ok := strings.Cut(event, "; steps: ")
	if !ok {
		t.Fatalf("the event lists no steps: %q", event)
	}
	var names []string
	for _, step := range strings.Fields(steps) {
		name, _, _ := strings.Cut(step, "=")
		names = append(names, name)
	}
	want := []string{"seen", "admitted", "volumes_ready", "env_ready", "sandbox_turn", "sandbox_created",
		"image_ready/app", "container_created/app", "container_started/app", "ready", "status_written"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("steps %q, want %q (event %q)", names, want, event)
	}
	if !strings.Contains(event, "the slowest step was ") {
		t.Errorf("the event names no slowest step: %q", event)
	}
	if n := testutil.CollectAndCount(podStartStepSeconds); n < len(want) {
		t.Errorf("the steps' histogram has %d series, want at least %d", n, len(want))
	}
}

// Pure tests of which starts are traced and told: only those seen from the
// beginning, each once.
func TestStartBreakdownsTellEachStartOnce(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	ready := &corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	notReady := &corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}
	newPod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: k8stypes.UID("uid-" + uid), CreationTimestamp: metav1.NewTime(now.Add(-time.Second))}}
	}

	s := newStartBreakdowns(clk)
	pod := newPod("a")
	ctx := s.traced(context.Background(), pod, false)
	clk.SetTime(now.Add(500 * time.Millisecond))
	podstart.MarkStep(ctx, podstart.StepSandboxCreated, "")
	if _, done := s.written(pod, notReady, clk.Now(), clk.Now()); done {
		t.Error("a pod not Ready was told as started")
	}
	clk.SetTime(now.Add(time.Second))
	b, done := s.written(pod, ready, clk.Now(), clk.Now())
	if !done || b.Total != 2*time.Second {
		t.Errorf("written() = total %s, done %v; want 2s, true", b.Total, done)
	}
	if _, done := s.written(pod, ready, clk.Now(), clk.Now()); done {
		t.Error("a start was told twice")
	}
	s.traced(context.Background(), pod, true)
	if _, done := s.written(pod, ready, clk.Now(), clk.Now()); done {
		t.Error("a start told was traced again")
	}

	adopted := newPod("b")
	ctx = s.traced(context.Background(), adopted, true)
	podstart.MarkStep(ctx, podstart.StepSandboxCreated, "")
	if _, done := s.written(adopted, ready, clk.Now(), clk.Now()); done {
		t.Error("a pod the runtime held something of when first seen was told as a start")
	}

	// A sandbox made again for a pod seen before its first one: no
	// sandbox created in this trace, nothing told.
	noSandbox := newPod("c")
	s.traced(context.Background(), noSandbox, false)
	if _, done := s.written(noSandbox, ready, clk.Now(), clk.Now()); done {
		t.Error("a start without a sandbox made was told")
	}
}

// A start ends when the API server's answer to the Ready status began to
// arrive, not when nodelet is done reading it (pure, on a fake clock).
func TestAStartEndsWhenTheReadyStatusWasWritten(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(now)
	ready := &corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-a", CreationTimestamp: metav1.NewTime(now.Add(-time.Second))}}

	s := newStartBreakdowns(clk)
	podstart.MarkStep(s.traced(context.Background(), pod, false), podstart.StepSandboxCreated, "")
	clk.SetTime(now.Add(2 * time.Second))
	b, done := s.written(pod, ready, now.Add(time.Second), now.Add(1200*time.Millisecond))
	if !done || b.Total != 2200*time.Millisecond {
		t.Fatalf("written() = total %s, done %v; want 2.2s, true", b.Total, done)
	}
	if got := b.String(); !strings.HasSuffix(got, "ready=1s status_written=200ms") {
		t.Errorf("breakdown %q does not end with ready=1s status_written=200ms", got)
	}
}

// withAnswerTime's time is when the answer's first byte arrived: against
// a real HTTP server (httptest) that sends its answer's head, then waits
// before the rest, on a fake clock moved in between.
func TestAnswerTimeIsWhenTheAnswerBeganToArrive(t *testing.T) {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	rest := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-rest
		fmt.Fprint(w, "the rest")
	}))
	defer server.Close()

	gotFirst := make(chan struct{})
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotFirstResponseByte: func() { close(gotFirst) }})
	ctx, answered := withAnswerTime(ctx, clk)
	if got := answered(); !got.Equal(start) {
		t.Errorf("before any request, answered() = %s, want now (%s)", got, start)
	}

	headArrived := start.Add(time.Second)
	clk.SetTime(headArrived)
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, server.URL, nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		done <- err
	}()
	select {
	case <-gotFirst:
	case <-time.After(30 * time.Second):
		t.Fatal("the answer's head did not arrive within 30s")
	}
	clk.SetTime(start.Add(2 * time.Second))
	close(rest)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := answered(); !got.Equal(headArrived) {
		t.Errorf("answered() = %s, want %s, when the answer's head arrived", got, headArrived)
	}
}
