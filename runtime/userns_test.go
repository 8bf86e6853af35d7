package runtime

// User namespaces through CRI, against the CRI fake of
// k8s.io/cri-api/pkg/apis/testing (its Status made to list handlers) and
// a real userns.Manager over a temporary folder.

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/resources/userns"
)

func TestSyncPodUserNamespace(t *testing.T) {
	withUserns := []*runtimeapi.RuntimeHandler{
		{Name: "", Features: &runtimeapi.RuntimeHandlerFeatures{}},
		{Name: "runc-userns", Features: &runtimeapi.RuntimeHandlerFeatures{UserNamespaces: true}},
	}
	// The first pod's range on a node without /etc/subuid: the default
	// node range's first slot.
	podRange := &runtimeapi.UserNamespace{
		Mode: runtimeapi.NamespaceMode_POD,
		Uids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}},
		Gids: []*runtimeapi.IDMapping{{HostId: 65536, ContainerId: 0, Length: 65536}},
	}
	tests := map[string]struct {
		hostUsers *bool
		handler   string // the RuntimeClass's
		handlers  []*runtimeapi.RuntimeHandler
		noRanges  bool // no userns.Manager in the config
		// want is the sandbox's and every container's user namespace;
		// wantEvent, when set, is the sandbox's failure instead.
		want      *runtimeapi.UserNamespace
		wantEvent string
	}{
		"hostUsers unset: the host's": {handlers: withUserns},
		"hostUsers false on a handler with user namespaces: the pod's own range": {
			hostUsers: ptr.To(false), handler: "runc-userns", handlers: withUserns, want: podRange,
		},
		"hostUsers false with no ranges to hand out": {
			hostUsers: ptr.To(false), handler: "runc-userns", handlers: withUserns, noRanges: true,
			wantEvent: "Failed to create pod sandbox: can't set `spec.hostUsers: false`, nodelet has no user namespace ID ranges to allocate",
		},
		"hostUsers false on a handler without them: the kubelet's refusal": {
			hostUsers: ptr.To(false), handlers: withUserns,
			wantEvent: "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces",
		},
		"hostUsers false on a RuntimeClass handler without them": {
			hostUsers: ptr.To(false), handler: "runc-alt", handlers: append(withUserns, &runtimeapi.RuntimeHandler{Name: "runc-alt"}),
			wantEvent: "Failed to create pod sandbox: can't set `spec.hostUsers: false`, RuntimeClass handler \"runc-alt\" does not support user namespaces",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newSyncTestEnv(t)
			e.runtime.handlers = tc.handlers
			e.m.config.RuntimeClasses = fakeRuntimeClasses{"userns": "runc-userns", "alt": "runc-alt"}
			root := t.TempDir()
			podDir := func(uid types.UID) string { return filepath.Join(root, "pods", string(uid)) }
			ranges, err := userns.NewManager(userns.Options{
				SubUIDFile: filepath.Join(root, "subuid"), SubGIDFile: filepath.Join(root, "subgid"), MaxPods: 110,
				PodDir: podDir, Pods: func() ([]types.UID, error) { return nil, nil }, Log: logr.Discard(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.noRanges {
				e.m.config.UserNamespaces = ranges
			}
			ctx := context.Background()
			pod := syncTestPod()
			pod.Spec.HostUsers = tc.hostUsers
			for class, handler := range map[string]string{"userns": "runc-userns", "alt": "runc-alt"} {
				if handler == tc.handler {
					pod.Spec.RuntimeClassName = ptr.To(class)
				}
			}
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			before, err := e.m.GetPodStatus(ctx, pod.UID)
			if err != nil {
				t.Fatal(err)
			}
			actions := ComputePodActions(pod, before, nil, e.clock.Now())
			result := e.m.SyncPod(ctx, pod, before, actions, &PodEnv{PodDir: podDir(pod.UID), VolumePaths: map[string]string{"data": t.TempDir()}})

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
				// A refused pod takes no range: the next pod gets the first.
				if r, err := ranges.PodRange("next"); err != nil || r.First != 65536 {
					t.Errorf("the next pod's range = %+v, %v, want the first slot", r, err)
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
			if diff := cmp.Diff(tc.want, status.GetStatus().GetLinux().GetNamespaces().GetOptions().GetUsernsOptions(), protocmp.Transform()); diff != "" {
				t.Errorf("the sandbox's user namespace (-want +got):\n%s", diff)
			}
			if len(e.runtime.configs) != 1 {
				t.Fatalf("%d containers created, want 1", len(e.runtime.configs))
			}
			for _, config := range e.runtime.configs {
				if diff := cmp.Diff(tc.want, config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(), protocmp.Transform()); diff != "" {
					t.Errorf("the container's user namespace (-want +got):\n%s", diff)
				}
				// Every mount is idmapped as the pod's namespace is mapped.
				for _, mount := range config.GetMounts() {
					got := &runtimeapi.UserNamespace{Mode: tc.want.GetMode(), Uids: mount.GetUidMappings(), Gids: mount.GetGidMappings()}
					want := &runtimeapi.UserNamespace{Mode: tc.want.GetMode(), Uids: tc.want.GetUids(), Gids: tc.want.GetGids()}
					if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
						t.Errorf("the mappings of mount %s (-want +got):\n%s", mount.GetContainerPath(), diff)
					}
				}
			}
		})
	}
}
