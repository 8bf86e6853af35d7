package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestStartedPodHasPulledCreatedStartedEventsFromComponentKubeletOnItsNode(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "eventful").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	// Events are sent asynchronously; they may trail the status a little.
	want := []string{"Pulled", "Created", "Started"}
	var seen []string
	err := await.Poll(t.Context(), 30*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
		events, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String(),
		})
		if err != nil {
			return false, err
		}
		seen = nil
		var reasons []string
		for _, e := range events.Items {
			seen = append(seen, fmt.Sprintf("%s from %q on %q", e.Reason, e.Source.Component, e.Source.Host))
			// The kubelet's source, which tools select its events by.
			if e.Source.Component == "kubelet" && e.Source.Host == f.Env.NodeName {
				reasons = append(reasons, e.Reason)
			}
		}
		for _, reason := range want {
			if !slices.Contains(reasons, reason) {
				return false, nil
			}
		}
		return true, nil
	}))
	if err != nil {
		t.Errorf("events of the pod = %v, want %v from component nodelet: %v", seen, want, err)
	}
}

// nodelet's start and its first status are seen on the Node as the
// kubelet's: Starting, then each condition's event with the kubelet's
// message.
func TestNodeHasStartingAndConditionEvents(t *testing.T) {
	t.Parallel()
	f.waitForNodeEvents(t, 30*time.Second, "Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady")
}

// waitForNodeEvents waits for the node's events of each reason from the
// kubelet's component: Starting, or a condition's with the kubelet's
// message "Node <name> status is now: <reason>".
func (f *Framework) waitForNodeEvents(t *testing.T, timeout time.Duration, want ...string) {
	t.Helper()
	var seen []string
	err := await.Poll(t.Context(), timeout, await.Condition(func(ctx context.Context) (bool, error) {
		events, err := f.Client.CoreV1().Events("").List(ctx, metav1.ListOptions{
			FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.kind", "Node"),
				fields.OneTermEqualSelector("involvedObject.name", f.Env.NodeName)).String(),
		})
		if err != nil {
			return false, err
		}
		seen = nil
		var reasons []string
		for _, e := range events.Items {
			seen = append(seen, fmt.Sprintf("%s %q from %q", e.Reason, e.Message, e.Source.Component))
			if e.Source.Component != "kubelet" || e.Source.Host != f.Env.NodeName {
				continue
			}
			if e.Reason == "Starting" || e.Message == fmt.Sprintf("Node %s status is now: %s", f.Env.NodeName, e.Reason) {
				reasons = append(reasons, e.Reason)
			}
		}
		for _, reason := range want {
			if !slices.Contains(reasons, reason) {
				return false, nil
			}
		}
		return true, nil
	}))
	if err != nil {
		t.Errorf("events of node %s = %v, want %v from the kubelet's component with its messages: %v", f.Env.NodeName, seen, want, err)
	}
}
