package controllers

// What containers start with, read from a real API server (envtest) by the
// reconciler's podenv.Gatherer, with the real runtime.Manager over the CRI
// fake; and, on plain values, when the reconciler reads it. The
// real-runtime version, where the container prints its env, lives in
// test/e2e.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

func TestPodStartsByItselfOnceItsConfigMapKeyExists(t *testing.T) {
	env := startReconciler(t)
	ctx := context.Background()
	env.createNamespace(t, "config")

	pod := testPod("config", "web")
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"},
	}}}
	if err := env.client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitingFor := func(message string) func(*corev1.Pod) error {
		return func(p *corev1.Pod) error {
			if len(p.Status.ContainerStatuses) != 1 {
				return fmt.Errorf("container statuses %+v", p.Status.ContainerStatuses)
			}
			w := p.Status.ContainerStatuses[0].State.Waiting
			if w == nil || w.Reason != "CreateContainerConfigError" || w.Message != message {
				return fmt.Errorf("state %+v", p.Status.ContainerStatuses[0].State)
			}
			return nil
		}
	}
	key := client.ObjectKeyFromObject(pod)
	env.waitForPod(t, key, "CreateContainerConfigError for the missing ConfigMap", waitingFor(`configmap "settings" not found`))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "config", Name: "settings"}, Data: map[string]string{"other": "x"}}
	if err := env.client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	env.waitForPod(t, key, "CreateContainerConfigError for the missing key", waitingFor("couldn't find key mode in ConfigMap config/settings"))

	cm.Data["mode"] = "fast"
	if err := env.client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	// Failed starts are retried every 10s.
	got := env.waitForPod(t, key, "pod running once the key exists", running)
	if got.UID != pod.UID {
		t.Errorf("the pod was replaced (uid %s, created as %s)", got.UID, pod.UID)
	}
	if n := len(env.runtimeContainers(t, pod.UID)); n != 1 {
		t.Errorf("containers of the pod: %d, want 1", n)
	}
}

// recordingEnvSources stands in for podenv.Gatherer: it records which
// containers it was asked about and fails while err is set.
type recordingEnvSources struct {
	asked [][]string
	err   error
}

func (s *recordingEnvSources) Gather(_ context.Context, _ *corev1.Pod, containers []*corev1.Container, _ *kubecontainer.EnvSources) error {
	var names []string
	for _, c := range containers {
		names = append(names, c.Name)
	}
	s.asked = append(s.asked, names)
	return s.err
}

func TestGatherEnvReadsOnlyForContainersToStartAndRetriesSoonAfterAFailure(t *testing.T) {
	sources := &recordingEnvSources{}
	r := NewPodReconciler(&PodReconciler{EnvSources: sources})
	pod := testPod("ns", "web")
	pod.UID = "uid-1"
	pod.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar"})
	ctx := context.Background()

	if r.gatherEnv(ctx, pod, noderuntime.PodActions{CreateSandbox: true}, &noderuntime.PodEnv{}) || len(sources.asked) != 0 {
		t.Fatalf("with no container to start: asked %v, want nothing read", sources.asked)
	}

	starting := noderuntime.PodActions{
		InitContainersToStart: []noderuntime.ContainerToStart{{Index: 0}},
		ContainersToStart:     []noderuntime.ContainerToStart{{Index: 1}},
	}
	sources.err = errors.New(`configmaps "x" is forbidden`)
	if !r.gatherEnv(ctx, pod, starting, &noderuntime.PodEnv{}) {
		t.Error("a failed read: gatherEnv() = false, want a retry soon")
	}
	if got := r.quickRetryDelay(r.envFailures, pod.UID); got != 250*time.Millisecond {
		t.Errorf("first retry in %s, want 250ms", got)
	}
	if got := r.quickRetryDelay(r.envFailures, pod.UID); got != 500*time.Millisecond {
		t.Errorf("second retry in %s, want 500ms", got)
	}
	sources.err = nil
	if r.gatherEnv(ctx, pod, starting, &noderuntime.PodEnv{}) {
		t.Error("a good read: gatherEnv() = true, want no retry")
	}
	if n := r.envFailures[pod.UID]; n != 0 {
		t.Errorf("failures counted after a good read: %d, want 0", n)
	}
	if diff := cmp.Diff([][]string{{"init", "sidecar"}, {"init", "sidecar"}}, sources.asked); diff != "" {
		t.Errorf("containers asked about (-want +got):\n%s", diff)
	}
}
