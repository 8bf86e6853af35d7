package controllers

// The kill's grace period against a second delete, with a bare reconciler
// and controller-runtime's fake client (no API server): startKill's Get
// finds no newer Pod, so only the update event can shorten the kill.

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

func TestASecondDeleteInterruptsTheKillOnlyWhenItShortensTheGracePeriod(t *testing.T) {
	deleting := func(specGrace int64, deleteGrace *int64) *corev1.Pod {
		pod := testPod("ns", "web")
		pod.UID = "uid-1"
		pod.Spec.TerminationGracePeriodSeconds = ptr.To(specGrace)
		pod.DeletionTimestamp = ptr.To(metav1.Now())
		pod.DeletionGracePeriodSeconds = deleteGrace
		return pod
	}
	tests := []struct {
		name          string
		first, second *corev1.Pod
		wantShortened bool
	}{
		{"a shorter delete", deleting(60, ptr.To[int64](30)), deleting(60, ptr.To[int64](5)), true},
		{"the same delete again", deleting(60, ptr.To[int64](30)), deleting(60, ptr.To[int64](30)), false},
		{"a force delete", deleting(60, ptr.To[int64](30)), deleting(60, ptr.To[int64](0)), true},
		// Without its own grace period the delete gives the spec's, which
		// is what the runtime then stops the containers with.
		{"a delete of the spec's period after a longer one", deleting(10, ptr.To[int64](30)), deleting(10, nil), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewPodReconciler(&PodReconciler{Client: fake.NewClientBuilder().Build()})
			ctx, shortened := r.startKill(context.Background(), tt.first)
			if got, want := r.kills[tt.first.UID].grace, podutil.TerminationGracePeriodSeconds(tt.first); got != want {
				t.Fatalf("the kill started with %ds, the runtime stops the containers with %ds", got, want)
			}
			r.noticeGracePeriod(event.UpdateEvent{ObjectOld: tt.first, ObjectNew: tt.second})
			if shortened() != tt.wantShortened {
				t.Errorf("shortened = %t, want %t", shortened(), tt.wantShortened)
			}
			if (ctx.Err() != nil) != tt.wantShortened {
				t.Errorf("kill context error %v, want cancelled %t", ctx.Err(), tt.wantShortened)
			}
			r.endKill(tt.first.UID)
		})
	}
}

func TestDeletedPodsAreForgottenAfterTheirMemory(t *testing.T) {
	var deleted deletedPods
	t0 := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	deleted.mark("a", t0)
	if !deleted.has("a") || deleted.has("b") {
		t.Fatalf("after marking a: has(a)=%v has(b)=%v, want true false", deleted.has("a"), deleted.has("b"))
	}
	// Marking another pod later forgets those deleted too long ago.
	deleted.mark("b", t0.Add(deletedMemory+time.Second))
	if deleted.has("a") || !deleted.has("b") {
		t.Errorf("after marking b past a's memory: has(a)=%v has(b)=%v, want false true", deleted.has("a"), deleted.has("b"))
	}
}
