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

func TestPodStartLatencyIsObservedOnTheMetricsEndpoint(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	before, err := startSLICount(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	pod := f.createPod(t, newPod(ns, "measured").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	// Other tests start pods too: the count must grow by at least this one.
	err = poll(t.Context(), 30*time.Second, func(ctx context.Context) (bool, error) {
		after, err := startSLICount(ctx)
		return err == nil && after > before, err
	})
	if err != nil {
		t.Errorf("nodelet_pod_start_sli_duration_seconds_count did not grow past %d after a pod started: %v", before, err)
	}
}
