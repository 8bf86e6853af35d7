package server

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRunningPodsAreReadySandboxesAndRunningContainers(t *testing.T) {
	sandbox := func(id, name, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{Id: id, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: uid}}
	}
	container := func(sandboxID, name, image string) *runtimeapi.Container {
		return &runtimeapi.Container{PodSandboxId: sandboxID, Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: image}}
	}
	got := runningPods([]*runtimeapi.PodSandbox{
		sandbox("s-web", "web", "u-web", runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("s-idle", "idle", "u-idle", runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("s-done", "done", "u-done", runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
		// Its sandbox stopped, a container still runs: it is running.
		sandbox("s-orphan", "orphan", "u-orphan", runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
	}, []*runtimeapi.Container{
		container("s-web", "sidecar", "busybox:1.35"),
		container("s-web", "app", "nginx:1.27"),
		container("s-orphan", "app", "busybox:1.35"),
	})
	var summary []string
	for _, p := range got.Items {
		s := p.Namespace + "/" + p.Name + " " + string(p.UID) + ":"
		for _, c := range p.Spec.Containers {
			s += " " + c.Name + "=" + c.Image
		}
		summary = append(summary, s)
	}
	want := []string{
		"ns/idle u-idle:",
		"ns/orphan u-orphan: app=busybox:1.35",
		"ns/web u-web: app=nginx:1.27 sidecar=busybox:1.35",
	}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("running pods (-want +got):\n%s", diff)
	}
	if got.Kind != "PodList" || got.APIVersion != "v1" {
		t.Errorf("a %s/%s, want a v1 PodList", got.APIVersion, got.Kind)
	}
}
