package e2e

// nodelet's HTTPS port itself: who may use it, the stats it serves, and
// its serving certificate. The API server's node proxy refuses loopback
// node addresses, so these tests call the port directly, as
// metrics-server and monitoring agents do.

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// restartNodeletWith restarts nodelet with extra flags; when the test
// ends, nodelet is restarted with the stack's flags again.
func (f *Framework) restartNodeletWith(t *testing.T, args ...string) {
	t.Helper()
	// Registered before the first stop: however this goes, the tests
	// after this one get nodelet back with the stack's flags.
	t.Cleanup(func() {
		if err := f.Nodelet.Stop(30 * time.Second); err != nil {
			t.Errorf("stopping nodelet: %v", err)
		}
		f.Nodelet.SetExtraArgs(nil)
		f.restartNodelet(t)
	})
	if err := f.Nodelet.Stop(30 * time.Second); err != nil {
		t.Fatalf("stopping nodelet: %v", err)
	}
	f.Nodelet.SetExtraArgs(args)
	f.restartNodelet(t)
}

// serviceAccountToken makes a ServiceAccount, bound to a ClusterRole with
// the given rules if any, and returns a token of it.
func (f *Framework) serviceAccountToken(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	if _, err := f.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(rules) > 0 {
		role := ns + "-" + name
		if _, err := f.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: rules,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx := context.Background()
			_ = f.Client.RbacV1().ClusterRoleBindings().Delete(ctx, role, metav1.DeleteOptions{})
			_ = f.Client.RbacV1().ClusterRoles().Delete(ctx, role, metav1.DeleteOptions{})
		})
	}
	token, err := f.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return token.Status.Token
}

// waitForNodeAccess waits until the API server allows user to get
// nodes/<subresource> of this node.
func (f *Framework) waitForNodeAccess(t *testing.T, user, subresource string) {
	t.Helper()
	f.waitForNodeVerb(t, user, "get", subresource)
}

// waitForNodeVerb waits until the API server allows user the verb on
// nodes/<subresource> of this node.
func (f *Framework) waitForNodeVerb(t *testing.T, user, verb, subresource string) {
	t.Helper()
	await.Eventually(t, 30*time.Second, user+" to be allowed to "+verb+" nodes/"+subresource, await.Condition(func(ctx context.Context) (bool, error) {
		review, err := f.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   user,
				Groups: []string{"system:serviceaccounts", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: verb, Version: "v1", Resource: "nodes", Subresource: subresource, Name: f.Env.NodeName,
				},
			},
		}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, err
	}))
}

func TestNodeAPIAuthentication(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	stranger := f.serviceAccountToken(t, ns, "stranger")
	// The binding exists before the first request: a refusal would be
	// remembered for 30 seconds.
	proxier := f.serviceAccountToken(t, ns, "proxier", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"},
	})

	check := func(t *testing.T, what, token string, want int, wantBody string) {
		t.Helper()
		code, body, err := f.nodeAPI(t.Context(), "/pods", nil, token)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if code != want || !strings.Contains(string(body), wantBody) {
			t.Errorf("%s: GET /pods answered %d %.200q, want %d %q", what, code, body, want, wantBody)
		}
	}
	t.Run("no credentials: 401", func(t *testing.T) {
		check(t, "a request without credentials", "", 401, "Unauthorized")
	})
	t.Run("a bad token: 401", func(t *testing.T) {
		check(t, "a request with a made-up token", "not-a-token", 401, "Unauthorized")
	})
	t.Run("a user without nodes/proxy: 403", func(t *testing.T) {
		check(t, "a user without rights on the node", stranger, 403,
			fmt.Sprintf("Forbidden (user=system:serviceaccount:%s:stranger, verb=get, resource=nodes, subresource(s)=[pods proxy])", ns))
	})
	t.Run("a user with nodes/proxy: 200", func(t *testing.T) {
		// RBAC sees a new binding a moment late, and nodelet would
		// remember an early refusal: ask once the API server allows it.
		f.waitForNodeAccess(t, fmt.Sprintf("system:serviceaccount:%s:proxier", ns), "proxy")
		code, body, err := f.nodeAPI(t.Context(), "/pods", nil, proxier)
		var list corev1.PodList
		if err == nil {
			err = json.Unmarshal(body, &list)
		}
		if code != 200 || err != nil {
			t.Errorf("GET /pods as a user with nodes/proxy: %d %.200q %v, want 200 and a PodList", code, body, err)
		}
	})
	t.Run("the API server's client certificate: 200", func(t *testing.T) {
		code, _, err := f.nodeAPI(t.Context(), "/healthz", f.kubeletClientCert(t), "")
		if err != nil || code != 200 {
			t.Errorf("GET /healthz with the API server's client certificate: %d %v, want 200", code, err)
		}
	})
}

func TestNodeAPIStatsSummary(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	// One pod busy on the CPU (held to a fifth of a core, so as not to
	// slow the other tests), one holding 32 MiB of memory.
	busyPod := newPod(ns, "busy").withShell("while true; do :; done").obj()
	busyPod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}
	busy := f.createPod(t, busyPod)
	// (The loop keeps the shell: a last command alone would replace it.)
	// It asks for a little CPU: filling the string takes a second of CPU,
	// and a BestEffort pod waits behind every other pod of the busy suite
	// (its tier has the least CPU shares), past the wait for its log.
	holderPod := newPod(ns, "holder").withShell("x=$(yes 0123456789abcdef | head -c 33554432); echo holding; while :; do sleep 3600; done").obj()
	holderPod.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	holder := f.createPod(t, holderPod)
	busy = f.waitForPod(t, busy, podStartTimeout, "to be Running and Ready", runningAndReady)
	holder = f.waitForPod(t, holder, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogs(t, "holding\n", ns, "holder")
	cert := f.kubeletClientCert(t)

	summary := func(ctx context.Context) (*statsapi.Summary, error) {
		code, body, err := f.nodeAPI(ctx, "/stats/summary", cert, "")
		if err != nil {
			return nil, err
		}
		if code != 200 {
			return nil, fmt.Errorf("GET /stats/summary answered %d %.200q", code, body)
		}
		var s statsapi.Summary
		return &s, json.Unmarshal(body, &s)
	}
	podStats := func(s *statsapi.Summary, pod *corev1.Pod) *statsapi.PodStats {
		for i := range s.Pods {
			if s.Pods[i].PodRef.UID == string(pod.UID) {
				return &s.Pods[i]
			}
		}
		return nil
	}
	// A CPU rate needs two readings: poll until the summary has one.
	var last *statsapi.Summary
	err := await.Poll(t.Context(), time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		s, err := summary(ctx)
		if err != nil {
			return false, err
		}
		last = s
		for _, pod := range []*corev1.Pod{busy, holder} {
			p := podStats(s, pod)
			if p == nil || p.CPU == nil || p.CPU.UsageNanoCores == nil || p.Memory == nil || len(p.Containers) != 1 ||
				p.Containers[0].CPU == nil || p.Containers[0].CPU.UsageNanoCores == nil || p.Containers[0].Memory == nil {
				return false, nil
			}
		}
		return true, nil
	}))
	if err != nil {
		data, _ := json.MarshalIndent(last, "", "  ")
		t.Fatalf("no CPU and memory of both pods and their containers: %v; last summary:\n%s", err, data)
	}
	if last.Node.NodeName != f.Env.NodeName || last.Node.CPU == nil || last.Node.Memory == nil || last.Node.Memory.WorkingSetBytes == nil {
		t.Errorf("the summary's node part: %+v, want this node's CPU and memory", last.Node)
	}
	b, h := podStats(last, busy), podStats(last, holder)
	// The busy loop gets its fifth of a core (its request outweighs the
	// other tests' pods, which request nothing): well over a twentieth.
	if *b.CPU.UsageNanoCores < 50_000_000 || *b.CPU.UsageNanoCores > 300_000_000 {
		t.Errorf("the busy pod uses %d nanocores, want about 0.2 core", *b.CPU.UsageNanoCores)
	}
	if *b.CPU.UsageCoreNanoSeconds == 0 || b.Containers[0].Name != "app" {
		t.Errorf("the busy pod's stats: %+v", b)
	}
	// The holder keeps a 32 MiB string in its shell.
	if ws := h.Memory.WorkingSetBytes; ws == nil || *ws < 32<<20 {
		t.Errorf("the holder pod's working set: %s, want over 32 MiB", describeBytes(ws))
	}

	// The same, as metrics-server reads it.
	code, body, err := f.nodeAPI(t.Context(), "/metrics/resource", cert, "")
	if err != nil || code != 200 {
		t.Fatalf("GET /metrics/resource: %d %v", code, err)
	}
	for _, want := range []string{
		fmt.Sprintf(`container_cpu_usage_seconds_total{container="app",namespace="%s",pod="busy"}`, ns),
		fmt.Sprintf(`container_memory_working_set_bytes{container="app",namespace="%s",pod="holder"}`, ns),
		fmt.Sprintf(`pod_memory_working_set_bytes{namespace="%s",pod="holder"}`, ns),
		"node_cpu_usage_seconds_total ",
		"scrape_error 0",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics/resource has no %s", want)
		}
	}
	// And the kubelet's metrics, the pod start latency among them.
	code, body, err = f.nodeAPI(t.Context(), "/metrics", cert, "")
	if err != nil || code != 200 || !strings.Contains(string(body), "kubelet_pod_start_sli_duration_seconds_count") {
		t.Errorf("GET /metrics: %d %v, want nodelet's metrics with the pod start latency", code, err)
	}
}

func TestNodeAPIRun(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "target").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	// The kubelet's /run: the command in "cmd", split at spaces; the
	// answer is its output.
	code, body, err := f.nodeAPIRequest(t.Context(), http.MethodPost, "/run/"+ns+"/target/app?cmd=echo+ran+here", f.kubeletClientCert(t), "")
	if err != nil || code != 200 || string(body) != "ran here\n" {
		t.Errorf("POST /run: %d %q %v, want 200 and the command's output", code, body, err)
	}
}

func describeBytes(n *uint64) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprintf("%d bytes", *n)
}

// servingCSRs lists the kubelet-serving CSRs of this node made after
// since, oldest first.
func (f *Framework) servingCSRs(ctx context.Context, since time.Time) ([]certificatesv1.CertificateSigningRequest, error) {
	list, err := f.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var csrs []certificatesv1.CertificateSigningRequest
	for _, csr := range list.Items {
		if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName &&
			csr.Spec.Username == "system:node:"+f.Env.NodeName && !csr.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
			csrs = append(csrs, csr)
		}
	}
	return csrs, nil
}

// approveNext waits for a pending CSR not in seen, approves it as an
// administrator, and returns the certificate the signer issued.
func (f *Framework) approveNext(t *testing.T, since time.Time, seen map[string]bool, timeout time.Duration) *x509.Certificate {
	t.Helper()
	var csr *certificatesv1.CertificateSigningRequest
	await.Eventually(t, timeout, "nodelet's next certificate signing request", await.Condition(func(ctx context.Context) (bool, error) {
		csrs, err := f.servingCSRs(ctx, since)
		if err != nil {
			return false, err
		}
		for i := range csrs {
			if !seen[csrs[i].Name] {
				csr = &csrs[i]
				return true, nil
			}
		}
		return false, nil
	}))
	seen[csr.Name] = true
	// Nobody approved it: a kubelet-serving request waits for an
	// administrator.
	for _, c := range csr.Status.Conditions {
		t.Errorf("CSR %s came with condition %s before any approval", csr.Name, c.Type)
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
		Reason: "E2EApproved", Message: "approved by the e2e suite, as an administrator",
	})
	if _, err := f.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(t.Context(), csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("approving CSR %s: %v", csr.Name, err)
	}
	var issued []byte
	await.Eventually(t, time.Minute, "the controller-manager to sign CSR "+csr.Name, await.Condition(func(ctx context.Context) (bool, error) {
		got, err := f.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		issued = got.Status.Certificate
		return len(issued) > 0, nil
	}))
	block, _ := pem.Decode(issued)
	if block == nil {
		t.Fatalf("CSR %s holds no PEM certificate", csr.Name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// waitForServed waits until nodelet's port presents cert.
func (f *Framework) waitForServed(t *testing.T, cert *x509.Certificate, what string) time.Time {
	t.Helper()
	var lastErr error
	var last *x509.Certificate
	err := await.Poll(t.Context(), time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		served, err := f.servedCertificate(ctx)
		last, lastErr = served, err
		return err == nil && served.Equal(cert), nil
	}))
	if err != nil {
		t.Fatalf("nodelet does not serve %s (serial %s): last served %v, last error %v", what, cert.SerialNumber, serial(last), lastErr)
	}
	return time.Now()
}

func serial(c *x509.Certificate) string {
	if c == nil {
		return "none"
	}
	return c.SerialNumber.String()
}

// /runningpods lists what the runtime runs, as the kubelet's: a pod this
// test started, with its container's name and the image the runtime
// names (the kubelet's shows the runtime's name too, often the image ID).
func TestNodeAPIRunningPods(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "runs").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	code, body, err := f.nodeAPI(t.Context(), "/runningpods/", f.kubeletClientCert(t), "")
	var list corev1.PodList
	if err == nil {
		err = json.Unmarshal(body, &list)
	}
	if code != http.StatusOK || err != nil {
		t.Fatalf("GET /runningpods/: %d %.200q %v, want 200 and a PodList", code, body, err)
	}
	for _, p := range list.Items {
		if p.UID != pod.UID {
			continue
		}
		if p.Namespace != ns || p.Name != "runs" || len(p.Spec.Containers) != 1 ||
			p.Spec.Containers[0].Name != pod.Spec.Containers[0].Name || p.Spec.Containers[0].Image == "" {
			t.Errorf("/runningpods/ has the pod as %s/%s %+v, want %s/runs with its container %s and an image",
				p.Namespace, p.Name, p.Spec.Containers, ns, pod.Spec.Containers[0].Name)
		}
		return
	}
	t.Errorf("/runningpods/ lacks the running pod %s/runs: %.500s", ns, body)
}

// /logs/ serves the node's /var/log, as the kubelet's, to a user allowed
// nodes/log and to no one with nodes/proxy alone.
func TestNodeAPILogs(t *testing.T) {
	t.Parallel()
	name := fmt.Sprintf("nodelet-e2e-%d.log", time.Now().UnixNano())
	path := filepath.Join("/var/log", name)
	if err := os.WriteFile(path, []byte("a line for the node log test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
	ns := f.NewNamespace(t)
	reader := f.serviceAccountToken(t, ns, "log-reader", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"nodes/log"}, Verbs: []string{"get"},
	})
	proxier := f.serviceAccountToken(t, ns, "proxier", rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"},
	})
	f.waitForNodeAccess(t, "system:serviceaccount:"+ns+":log-reader", "log")
	f.waitForNodeAccess(t, "system:serviceaccount:"+ns+":proxier", "proxy")

	if code, body, err := f.nodeAPI(t.Context(), "/logs/"+name, nil, reader); err != nil || code != http.StatusOK || string(body) != "a line for the node log test\n" {
		t.Errorf("GET /logs/%s with nodes/log: %d %q %v, want 200 and the file", name, code, body, err)
	}
	if code, body, err := f.nodeAPI(t.Context(), "/logs/", nil, reader); err != nil || code != http.StatusOK || !strings.Contains(string(body), name) {
		t.Errorf("GET /logs/ with nodes/log: %d %.300q %v, want 200 and a listing naming %s", code, body, err, name)
	}
	if code, _, err := f.nodeAPI(t.Context(), "/logs/"+name, nil, proxier); err != nil || code != http.StatusForbidden {
		t.Errorf("GET /logs/%s with nodes/proxy alone: %d %v, want 403", name, code, err)
	}
}

// /checkpoint asks the runtime to checkpoint a running container, as the
// kubelet's: this stack's containerd 1.6 cannot, and the request fails
// with the kubelet's message and the runtime's reason; an unknown pod or
// container is 404.
func TestNodeAPICheckpoint(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := f.createPod(t, newPod(ns, "frozen").obj())
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	container := pod.Spec.Containers[0].Name
	cert := f.kubeletClientCert(t)

	code, body, err := f.nodeAPIRequest(t.Context(), http.MethodPost, "/checkpoint/"+ns+"/frozen/"+container, cert, "")
	want := fmt.Sprintf("checkpointing of %s/frozen/%s failed (", ns, container)
	if err != nil || code != http.StatusInternalServerError || !strings.Contains(string(body), want) || !strings.Contains(string(body), "rpc error") {
		t.Errorf("POST /checkpoint on containerd 1.6: %d %q %v, want 500 with %q and the runtime's reason", code, body, err, want)
	}
	for path, wantBody := range map[string]string{
		"/checkpoint/" + ns + "/frozen/nothing": "container nothing does not exist",
		"/checkpoint/" + ns + "/nothing/app":    "pod does not exist",
	} {
		if code, body, err := f.nodeAPIRequest(t.Context(), http.MethodPost, path, cert, ""); err != nil || code != http.StatusNotFound || !strings.Contains(string(body), wantBody) {
			t.Errorf("POST %s: %d %q %v, want 404 with %q", path, code, body, err, wantBody)
		}
	}
}
