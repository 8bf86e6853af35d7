package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// startSLICount reads how many pod starts the start-latency histogram (the
// kubelet's) has observed.
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
	m := regexp.MustCompile(`(?m)^kubelet_pod_start_sli_duration_seconds_count (\d+)$`).FindSubmatch(body)
	if m == nil {
		// As the kubelet's, the histogram has no series before its first
		// observation; the caller waits for the count to grow.
		return 0, nil
	}
	return strconv.Atoi(string(m[1]))
}

// TestPodStartLatencyIsObservedOnTheMetricsEndpoint starts pods and
// requires the start-latency histogram to have counted each of them once.
// The histogram has no label naming a pod (the kubelet's has none either),
// so the test runs alone (no t.Parallel): the sequential tests before it
// have waited for their namespaces to be gone and the parallel ones have
// not begun, and the stack's own pods (DNS, kube-proxy) have started before
// it counts, so no other pod starts while it counts.
func TestPodStartLatencyIsObservedOnTheMetricsEndpoint(t *testing.T) {
	const measured = 3
	ns := f.NewNamespace(t)
	await.Eventually(t, 2*time.Minute, "every other pod on the node to have all its containers running", func(ctx context.Context) error {
		pods, err := f.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + f.Env.NodeName})
		if err != nil {
			return err
		}
		for _, pod := range pods.Items {
			if pod.Namespace == ns || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			// A start is counted when the status shows every container
			// running, before that status is written.
			if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) < len(pod.Spec.Containers) {
				return fmt.Errorf("pod %s/%s is %s", pod.Namespace, pod.Name, pod.Status.Phase)
			}
			for _, c := range pod.Status.ContainerStatuses {
				if c.State.Running == nil {
					return fmt.Errorf("container %s of pod %s/%s is not running", c.Name, pod.Namespace, pod.Name)
				}
			}
		}
		return nil
	})
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
		t.Fatalf("kubelet_pod_start_sli_duration_seconds_count did not grow from %d by the %d pods this test started: %v", before, measured, err)
	}
	if after-before != measured {
		t.Errorf("kubelet_pod_start_sli_duration_seconds_count grew from %d to %d while this test alone started %d pods, want each counted once", before, after, measured)
	}
}

// hasSeries says whether the exposition holds a sample of the metric with
// (at least) the given labels.
func hasSeries(body []byte, name string, labels map[string]string) bool {
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		all := true
		for k, v := range labels {
			if !strings.Contains(line, fmt.Sprintf("%s=%q", k, v)) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// A scraper allowed only nodes/metrics, as Prometheus' kubelet jobs are,
// finds on nodelet's port the kubelet's metrics, its probe metrics and
// cAdvisor's container metrics for a pod it started.
func TestKubeletMetricsProbeMetricsAndCadvisorMetricsOnTheNodesPort(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	token := f.serviceAccountToken(t, ns, "scraper", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"nodes/metrics"}, Verbs: []string{"get"},
	})
	f.waitForNodeAccess(t, "system:serviceaccount:"+ns+":scraper", "metrics")

	pod := newPod(ns, "scraped").obj()
	pod.Spec.Containers[0].ReadinessProbe = execProbe("true")
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	app := map[string]string{"container": "app", "pod": "scraped", "namespace": ns}

	checks := map[string]map[string]map[string]string{
		"/metrics": {
			"kubelet_pod_start_sli_duration_seconds_bucket": {"le": "0.5"},
			"kubelet_pod_start_duration_seconds_bucket":     {"le": "0.5"},
			"kubelet_pod_worker_duration_seconds_bucket":    {"operation_type": "sync"},
			"kubelet_pleg_relist_duration_seconds_bucket":   {"le": "0.005"},
			"kubelet_pleg_relist_interval_seconds_bucket":   {"le": "0.005"},
			"kubelet_running_containers":                    {"container_state": "running"},
			"kubelet_started_containers_total":              {"container_type": "container"},
			// Every CRI call counted and timed, a start's among them.
			"kubelet_runtime_operations_total":                   {"operation_type": "run_podsandbox"},
			"kubelet_runtime_operations_duration_seconds_bucket": {"operation_type": "start_container", "le": "0.005"},
			"kubelet_node_name":                                  {"node": f.Env.NodeName},
			"kubelet_cgroup_manager_duration_seconds_bucket":     {"operation_type": "create"},
			"kubernetes_build_info":                              {"major": "1", "minor": "36"},
		},
		"/metrics/probes": {
			"prober_probe_total": {"probe_type": "Readiness", "result": "successful", "container": "app",
				"pod": "scraped", "namespace": ns, "pod_uid": string(pod.UID)},
			"prober_probe_duration_seconds_bucket": {"probe_type": "Readiness", "container": "app", "pod": "scraped", "namespace": ns},
		},
		"/metrics/cadvisor": {
			"container_cpu_usage_seconds_total":  app,
			"container_memory_working_set_bytes": app,
			"container_memory_usage_bytes":       app,
			"container_fs_usage_bytes":           app,
			"container_start_time_seconds":       app,
		},
	}
	for path, series := range checks {
		var body []byte
		var missing []string
		err := await.Poll(t.Context(), 30*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
			code, b, err := f.nodeAPI(ctx, path, nil, token)
			if err != nil {
				return false, fmt.Errorf("GET %s: %w", path, err)
			}
			if code != http.StatusOK {
				return false, fmt.Errorf("GET %s: status %d", path, code)
			}
			body, missing = b, nil
			for name, labels := range series {
				if !hasSeries(body, name, labels) {
					missing = append(missing, fmt.Sprintf("%s%v", name, labels))
				}
			}
			return len(missing) == 0, nil
		}))
		if err != nil {
			t.Errorf("GET %s: missing %v: %v\n%s", path, missing, err, body)
		}
	}
	// The single series of the pod counts and nothing under nodelet's own
	// name for what the kubelet names.
	code, body, err := f.nodeAPI(t.Context(), "/metrics", nil, token)
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	for _, line := range []string{"kubelet_running_pods ", "kubelet_pleg_discard_events "} {
		if !strings.Contains(string(body), "\n"+line) {
			t.Errorf("/metrics has no %s", line)
		}
	}
	if strings.Contains(string(body), "nodelet_pod_start_sli_duration_seconds") || strings.Contains(string(body), "nodelet_pleg_relist_duration_seconds") {
		t.Error("/metrics still names the kubelet's metrics nodelet_*")
	}
}
