package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/await"
)

// startSLICount reads how many pod starts nodelet's start-latency histogram
// has observed.
func startSLICount(ctx context.Context) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+f.Env.NodeletMetricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	m := regexp.MustCompile(`(?m)^nodelet_pod_start_sli_duration_seconds_count (\d+)$`).FindSubmatch(body)
	if m == nil {
		return 0, fmt.Errorf("no nodelet_pod_start_sli_duration_seconds_count in the metrics")
	}
	return strconv.Atoi(string(m[1]))
}

// TestPodStartLatencyIsObservedOnTheMetricsEndpoint starts pods and
// requires the start-latency histogram to have counted each of them once.
// The histogram has no label naming a pod (the kubelet's has none either),
// so the test runs alone (no t.Parallel): the sequential tests before it
// have waited for their namespaces to be gone and the parallel ones have
// not begun, so no other pod starts while it counts.
func TestPodStartLatencyIsObservedOnTheMetricsEndpoint(t *testing.T) {
	const measured = 3
	ns := f.NewNamespace(t)
	before, err := startSLICount(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var pods []*corev1.Pod
	for i := range measured {
		pods = append(pods, f.createPod(t, newPod(ns, fmt.Sprintf("measured-%d", i)).obj()))
	}
	for _, pod := range pods {
		f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	}
	// A start is observed once the status shows every container running,
	// which is before that status reaches the API server.
	after := before
	err = await.Poll(t.Context(), 30*time.Second, func(ctx context.Context) error {
		count, err := startSLICount(ctx)
		if err != nil {
			return err
		}
		after = count
		if after-before < measured {
			return fmt.Errorf("the count grew by %d", after-before)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("nodelet_pod_start_sli_duration_seconds_count did not grow from %d by the %d pods this test started: %v", before, measured, err)
	}
	if after-before != measured {
		t.Errorf("nodelet_pod_start_sli_duration_seconds_count grew from %d to %d while this test alone started %d pods, want each counted once", before, after, measured)
	}
}
