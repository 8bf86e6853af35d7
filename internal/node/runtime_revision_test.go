package node

import (
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// Pure tests: the RuntimeOutOfDate condition from the wanted and the
// recorded revisions, and the events of its transitions.

const (
	revisionV1 = "image=registry.example/nodelet:v1,config=c1,pod=p1"
	revisionV2 = "image=registry.example/nodelet:v2,config=c1,pod=p1"
)

func TestRuntimeRevisionCondition(t *testing.T) {
	const replace = ": drain the node, then delete the runtime's pod to have it started again"
	for name, tc := range map[string]struct {
		rev         runtimeRevision
		wantNone    bool
		wantStatus  corev1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		"no revision wanted: no condition": {
			rev:      runtimeRevision{running: revisionV1},
			wantNone: true,
		},
		"the recorded revision is the wanted one: False": {
			rev:        runtimeRevision{wanted: revisionV1, running: revisionV1 + "\n"},
			wantStatus: corev1.ConditionFalse, wantReason: ReasonRuntimeUpToDate,
			wantMessage: "the runtime runs the revision its deployment wants",
		},
		"the same pairs in another order are the same revision": {
			rev:        runtimeRevision{wanted: revisionV1, running: "pod=p1,config=c1,image=registry.example/nodelet:v1"},
			wantStatus: corev1.ConditionFalse, wantReason: ReasonRuntimeUpToDate,
			wantMessage: "the runtime runs the revision its deployment wants",
		},
		"another image: True, naming both": {
			rev:        runtimeRevision{wanted: revisionV2, running: revisionV1},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonRuntimeRevisionDiffers,
			wantMessage: "the runtime's pod was started with image registry.example/nodelet:v1 where registry.example/nodelet:v2 is wanted" + replace,
		},
		"another configuration and pod settings: True, naming each": {
			rev:        runtimeRevision{wanted: "image=i,config=c2,pod=p2", running: "image=i,config=c1,pod=p1"},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonRuntimeRevisionDiffers,
			wantMessage: "the runtime's pod was started with another configuration, other pod settings" + replace,
		},
		"a key nodelet does not know, changed": {
			rev:        runtimeRevision{wanted: "image=i,kernel=k2", running: "image=i,kernel=k1"},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonRuntimeRevisionDiffers,
			wantMessage: "the runtime's pod was started with another kernel" + replace,
		},
		"a key wanted that the record lacks, and one no longer wanted": {
			rev:        runtimeRevision{wanted: "image=i,config=c1", running: "config=c1,pod=p1"},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonRuntimeRevisionDiffers,
			wantMessage: "the runtime's pod was started with image an unrecorded one where i is wanted, a pod no longer wanted" + replace,
		},
		"no record (a runtime an older chart started): True, unknown": {
			rev:        runtimeRevision{wanted: revisionV1, readErr: fmt.Errorf("open /run/x/runtime-revision: %w", fs.ErrNotExist)},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonRuntimeRevisionUnknown,
			wantMessage: "the runtime's pod recorded no revision (an older chart started it)" + replace,
		},
		"a record that cannot be read: True, with the error": {
			rev:        runtimeRevision{wanted: revisionV1, readErr: fmt.Errorf("read /run/x/runtime-revision: %w", fs.ErrPermission)},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonRuntimeRevisionUnknown,
			wantMessage: "reading the runtime's revision: read /run/x/runtime-revision: permission denied",
		},
		"a record that is not key=value pairs: True, unknown": {
			rev:        runtimeRevision{wanted: revisionV1, running: "garbage"},
			wantStatus: corev1.ConditionTrue, wantReason: ReasonRuntimeRevisionUnknown,
			wantMessage: `the runtime's pod recorded a revision nodelet cannot read (revision "garbage": "garbage" is not key=value)` + replace,
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := runtimeRevisionCondition(tc.rev)
			if tc.wantNone {
				if ok {
					t.Errorf("runtimeRevisionCondition() = %+v, want none", got)
				}
				return
			}
			want := corev1.NodeCondition{Type: NodeRuntimeOutOfDate, Status: tc.wantStatus, Reason: tc.wantReason, Message: tc.wantMessage}
			if diff := cmp.Diff(want, got); !ok || diff != "" {
				t.Errorf("runtimeRevisionCondition() (ok %t) mismatch (-want +got):\n%s", ok, diff)
			}
		})
	}
}

func TestValidateRuntimeRevision(t *testing.T) {
	for _, tc := range []struct {
		revision string
		wantErr  bool
	}{
		{"", false},
		{revisionV1, false},
		{"image=", false},
		{"image", true},
		{"=x", true},
		{"image=a,image=b", true},
		{"image=a,,config=b", true},
		{"image=a, config=b ", false},
		{"image=a=b,config=c=d=", false},
	} {
		if err := ValidateRuntimeRevision(tc.revision); (err != nil) != tc.wantErr {
			t.Errorf("ValidateRuntimeRevision(%q) = %v, want an error: %t", tc.revision, err, tc.wantErr)
		}
	}
}

func TestRuntimeRevisionEvent(t *testing.T) {
	outOfDate := corev1.NodeCondition{Type: NodeRuntimeOutOfDate, Status: corev1.ConditionTrue, Message: "differs"}
	upToDate := corev1.NodeCondition{Type: NodeRuntimeOutOfDate, Status: corev1.ConditionFalse, Message: "same"}
	type event struct{ Type, Reason, Message string }
	for name, tc := range map[string]struct {
		current *corev1.NodeCondition
		want    corev1.NodeCondition
		event   *event
	}{
		"none, then out of date: a Warning":     {want: outOfDate, event: &event{corev1.EventTypeWarning, EventRuntimeOutOfDate, "differs"}},
		"up to date, then out of date":          {current: &upToDate, want: outOfDate, event: &event{corev1.EventTypeWarning, EventRuntimeOutOfDate, "differs"}},
		"out of date, then up to date: Normal":  {current: &outOfDate, want: upToDate, event: &event{corev1.EventTypeNormal, ReasonRuntimeUpToDate, "same"}},
		"none, then up to date: nothing to say": {want: upToDate},
		"out of date still: said already":       {current: &outOfDate, want: outOfDate},
		"up to date still":                      {current: &upToDate, want: upToDate},
	} {
		t.Run(name, func(t *testing.T) {
			eventType, reason, message, ok := runtimeRevisionEvent(tc.current, tc.want)
			var got *event
			if ok {
				got = &event{eventType, reason, message}
			}
			if diff := cmp.Diff(tc.event, got); diff != "" {
				t.Errorf("runtimeRevisionEvent() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNodeStatusRuntimeOutOfDate: the condition is in the Node's status,
// before Ready, only when a revision is wanted, and its transition time
// moves when its status does.
func TestNodeStatusRuntimeOutOfDate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	node := &corev1.Node{}
	status, _ := nodeStatus(node, nodeFacts{}, nodeRuntimeState{}, now, time.Minute)
	if c := findNodeCondition(&status, NodeRuntimeOutOfDate); c != nil {
		t.Fatalf("no revision wanted: condition %+v, want none", c)
	}

	rt := nodeRuntimeState{revision: runtimeRevision{wanted: revisionV2, running: revisionV1}}
	node.Status, _ = nodeStatus(node, nodeFacts{}, rt, now, time.Minute)
	c := findNodeCondition(&node.Status, NodeRuntimeOutOfDate)
	if c == nil || c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Time.Equal(now) {
		t.Fatalf("another image: condition %+v, want True since %v", c, now)
	}
	if last := node.Status.Conditions[len(node.Status.Conditions)-1]; last.Type != corev1.NodeReady {
		t.Errorf("the last condition is %s, want Ready", last.Type)
	}

	later := now.Add(time.Minute)
	rt.revision.running = revisionV2
	status, changed := nodeStatus(node, nodeFacts{}, rt, later, time.Hour)
	c = findNodeCondition(&status, NodeRuntimeOutOfDate)
	if !changed || c == nil || c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("the runtime replaced: condition %+v (changed %t), want False since %v, to be written", c, changed, later)
	}
}
