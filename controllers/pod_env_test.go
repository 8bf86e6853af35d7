package controllers

// What containers start with, read from a real API server (envtest) by the
// reconciler's podenv.Gatherer, with the real runtime.Manager over the CRI
// fake. The real-runtime version, where the container prints its env,
// lives in test/e2e.

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
