package controllers

// Helpers of the tests on envtest and the CRI fake (pod_controller_test.go):
// a running pod, and calls of the fake made to fail.

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runPod creates testPod's pod "web" in a new namespace and waits until it
// runs.
func (e *reconcilerEnv) runPod(t *testing.T, namespace string) (*corev1.Pod, types.NamespacedName) {
	t.Helper()
	e.createNamespace(t, namespace)
	pod := testPod(namespace, "web")
	if err := e.client.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(pod)
	return e.waitForPod(t, key, "pod running", running), key
}

// failCalls makes the CRI fake's next n calls of method fail with err (the
// fake pops one injected error per call).
func (e *reconcilerEnv) failCalls(method string, err error, n int) {
	e.runtime.Lock()
	defer e.runtime.Unlock()
	if e.runtime.Errors == nil {
		e.runtime.Errors = map[string][]error{}
	}
	e.runtime.Errors[method] = slices.Repeat([]error{err}, n)
}

// clearFailures drops the failures failCalls injected for method that no
// call met, and says how many those were.
func (e *reconcilerEnv) clearFailures(method string) int {
	e.runtime.Lock()
	defer e.runtime.Unlock()
	left := len(e.runtime.Errors[method])
	delete(e.runtime.Errors, method)
	return left
}
