package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/await"
	"github.com/nodelet/nodelet/podstart"
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
	if _, done := s.written(pod, notReady, clk.Now()); done {
		t.Error("a pod not Ready was told as started")
	}
	clk.SetTime(now.Add(time.Second))
	b, done := s.written(pod, ready, clk.Now())
	if !done || b.Total != 2*time.Second {
		t.Errorf("written() = total %s, done %v; want 2s, true", b.Total, done)
	}
	if _, done := s.written(pod, ready, clk.Now()); done {
		t.Error("a start was told twice")
	}
	s.traced(context.Background(), pod, true)
	if _, done := s.written(pod, ready, clk.Now()); done {
		t.Error("a start told was traced again")
	}

	adopted := newPod("b")
	ctx = s.traced(context.Background(), adopted, true)
	podstart.MarkStep(ctx, podstart.StepSandboxCreated, "")
	if _, done := s.written(adopted, ready, clk.Now()); done {
		t.Error("a pod the runtime held something of when first seen was told as a start")
	}

	// A sandbox made again for a pod seen before its first one: no
	// sandbox created in this trace, nothing told.
	noSandbox := newPod("c")
	s.traced(context.Background(), noSandbox, false)
	if _, done := s.written(noSandbox, ready, clk.Now()); done {
		t.Error("a start without a sandbox made was told")
	}
}
