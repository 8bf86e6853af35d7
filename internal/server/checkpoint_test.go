package server

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestCheckpointNameIsTheKubelets(t *testing.T) {
	at := time.Date(2026, 12, 8, 1, 2, 3, 0, time.UTC)
	if got, want := checkpointName("web_shop", "app", at), "checkpoint-web_shop-app-2026-12-08T01:02:03Z.tar"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestHasContainerLooksAtEveryKind(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:          []corev1.Container{{Name: "app"}},
		InitContainers:      []corev1.Container{{Name: "setup"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}},
	}}
	for _, name := range []string{"app", "setup", "debugger"} {
		if !hasContainer(pod, name) {
			t.Errorf("%s not found", name)
		}
	}
	if hasContainer(pod, "nothing") {
		t.Error("a container the pod lacks was found")
	}
}
