package runtime

// SyncPod's choice of runtime handler, against the CRI fake of
// k8s.io/cri-api/pkg/apis/testing.

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// fakeRuntimeClasses holds RuntimeClass handlers by name.
type fakeRuntimeClasses map[string]string

func (f fakeRuntimeClasses) Handler(_ context.Context, name string) (string, error) {
	if handler, ok := f[name]; ok {
		return handler, nil
	}
	return "", apierrors.NewNotFound(schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclass"}, name)
}

func TestSyncPodRuntimeHandler(t *testing.T) {
	tests := map[string]struct {
		mutate func(*corev1.Pod)
		// wantHandler is the handler of the sandbox made; wantEvent, when
		// set, is the sandbox's failure instead.
		wantHandler string
		wantEvent   string
	}{
		"no RuntimeClass: the default handler": {mutate: func(*corev1.Pod) {}, wantHandler: ""},
		"a RuntimeClass's handler reaches RunPodSandbox": {
			mutate:      func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("alt") },
			wantHandler: "runc-alt",
		},
		"a missing RuntimeClass fails the sandbox with the kubelet's event": {
			mutate:    func(p *corev1.Pod) { p.Spec.RuntimeClassName = ptr.To("gone") },
			wantEvent: `Warning FailedCreatePodSandBox Failed to create pod sandbox: runtimeclass.node.k8s.io "gone" not found`,
		},
		"hostUsers false on a runtime listing no handlers fails the sandbox": {
			mutate:    func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(false) },
			wantEvent: "Warning FailedCreatePodSandBox Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces",
		},
		"hostUsers true runs as any pod": {mutate: func(p *corev1.Pod) { p.Spec.HostUsers = ptr.To(true) }, wantHandler: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newSyncTestEnv(t)
			e.m.config.RuntimeClasses = fakeRuntimeClasses{"alt": "runc-alt"}
			ctx := context.Background()
			pod := syncTestPod()
			tc.mutate(pod)
			before, err := e.m.GetPodStatus(ctx, pod.UID)
			if err != nil {
				t.Fatal(err)
			}
			actions := ComputePodActions(pod, before, nil, e.clock.Now())
			result := e.m.SyncPod(ctx, pod, before, actions, &PodEnv{PodDir: t.TempDir()})

			sandboxes, err := e.runtime.ListPodSandbox(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantEvent != "" {
				if result.SandboxError == nil || len(sandboxes) != 0 {
					t.Fatalf("SyncPod() = %+v with %d sandboxes, want the sandbox to fail and none made", result, len(sandboxes))
				}
				if event := strings.Join(drainEvents(e.recorder), "\n"); !strings.Contains(event, tc.wantEvent) {
					t.Errorf("events:\n%s\nwant one holding %q", event, tc.wantEvent)
				}
				return
			}
			if result.Err != nil || len(sandboxes) != 1 {
				t.Fatalf("SyncPod() = %+v with %d sandboxes, want one sandbox", result, len(sandboxes))
			}
			status, err := e.runtime.PodSandboxStatus(ctx, sandboxes[0].Id, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := status.GetStatus().GetRuntimeHandler(); got != tc.wantHandler {
				t.Errorf("the sandbox's runtime handler = %q, want %q", got, tc.wantHandler)
			}
		})
	}
}
