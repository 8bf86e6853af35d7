package controllers

// Pods waiting for the node's pod network, against envtest and the CRI
// fake (see pod_controller_test.go).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestPodsWaitForTheNetworkWithAnEventButHostNetworkPodsRun(t *testing.T) {
	var networkErr atomic.Pointer[error]
	notReady := errors.New("nodelet network not ready: no CNI configuration file in /etc/cni/net.d")
	networkErr.Store(&notReady)
	env := startReconcilerWith(t, func(r *PodReconciler) {
		r.NetworkError = func() error { return *networkErr.Load() }
	})
	ctx := context.Background()
	env.createNamespace(t, "net")

	pod := testPod("net", "web")
	if err := env.client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	host := testPod("net", "host")
	host.Spec.HostNetwork = true
	if err := env.client.Create(ctx, host); err != nil {
		t.Fatal(err)
	}
	env.waitForPod(t, client.ObjectKeyFromObject(host), "the host-network pod running", running)

	want := "Warning NetworkNotReady network is not ready: " + notReady.Error()
	await.Eventually(t, 30*time.Second, "a NetworkNotReady event", func(context.Context) error {
		for _, e := range env.recordedEvents() {
			if e == want {
				return nil
			}
		}
		return fmt.Errorf("events %v, want %q", env.recordedEvents(), want)
	})
	got := &corev1.Pod{}
	if err := env.client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatal(err)
	}
	if sandboxes := env.runtimeSandboxes(t, got.UID); len(sandboxes) != 0 || got.Status.Phase != corev1.PodPending {
		t.Errorf("the pod has %d sandboxes and phase %s while the network is not ready, want none and Pending", len(sandboxes), got.Status.Phase)
	}
	for _, e := range env.recordedEvents() {
		if strings.Contains(e, "FailedCreatePodSandBox") {
			t.Errorf("the waiting pod failed instead: %s", e)
		}
	}

	var ready error
	networkErr.Store(&ready)
	env.waitForPod(t, client.ObjectKeyFromObject(pod), "the pod running once the network is ready", running)
}
