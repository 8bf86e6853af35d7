package server

// Tests of the whole server over TLS: authentication and authorisation
// against a real API server (envtest: kube-apiserver with RBAC, and etcd,
// from KUBEBUILDER_ASSETS), which answers the TokenReviews and
// SubjectAccessReviews and holds the Pods; the container runtime is the
// CRI fake (k8s.io/cri-api/pkg/apis/testing) with log files on disk.

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critesting "k8s.io/cri-api/pkg/apis/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelet/nodelet/api/config/v1alpha1"
	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The package's tests share one API server, started by the first test
// that needs it and stopped by TestMain.
var apiServer struct {
	once sync.Once
	env  *envtest.Environment
	cfg  *rest.Config
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiServer.env != nil {
		if err := apiServer.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the test API server:", err)
		}
	}
	os.Exit(code)
}

func testAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run this test through `make test`, which points it at a folder holding kube-apiserver and etcd")
	}
	apiServer.once.Do(func() {
		apiServer.env = &envtest.Environment{ControlPlaneStartTimeout: time.Minute, ControlPlaneStopTimeout: time.Minute}
		apiServer.cfg, apiServer.err = apiServer.env.Start()
	})
	if apiServer.err != nil {
		t.Fatalf("starting the test API server: %v", apiServer.err)
	}
	return apiServer.cfg
}

const testNode = "n1"

// testCA makes client certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

func (ca *testCA) writePEM(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientCert is a client certificate for user in groups.
func (ca *testCA) clientCert(t *testing.T, user string, groups ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: user, Organization: groups},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// testServer is a running server with what it serves from.
type testServer struct {
	url       string
	namespace string
	clientset kubernetes.Interface
	runtime   *streamingRuntime
	clock     *clocktesting.FakeClock
	ca        *testCA
	logDir    string
	healthErr error
}

// streamingRuntime is the CRI fake whose Exec, Attach and PortForward
// answer with a streaming URL.
type streamingRuntime struct {
	*critesting.FakeRuntimeService
	streamURL string
}

func (r *streamingRuntime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if _, err := r.FakeRuntimeService.Exec(ctx, req); err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: r.streamURL + "/exec/token"}, nil
}

func newTestServer(t *testing.T, auth AuthOptions) *testServer {
	t.Helper()
	cfg := testAPIServer(t)
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "server-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{
		namespace: ns.Name,
		clientset: clientset,
		runtime:   &streamingRuntime{FakeRuntimeService: critesting.NewFakeRuntimeService()},
		clock:     clocktesting.NewFakeClock(time.Now()),
		ca:        newTestCA(t),
		logDir:    t.TempDir(),
	}
	if auth.AuthorizationMode == "" {
		auth.AuthorizationMode = v1alpha1.AuthorizationModeWebhook
	}
	auth.ClientCAFile = ts.ca.writePEM(t)
	auth.TokenWebhook = true
	auth.TokenCacheTTL, auth.AuthorizedTTL, auth.UnauthorizedTTL = 2*time.Minute, 5*time.Minute, 30*time.Second
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "nodelet_test_total", Help: "A test metric."}))
	s, err := New(Config{
		Options: Options{
			NodeName: testNode,
			RootDir:  t.TempDir(),
			TLS:      TLSOptions{CertDir: t.TempDir()},
			Auth:     auth,
		},
		Client:     clientset,
		Pods:       pods,
		Runtime:    ts.runtime,
		Images:     critesting.NewFakeImageService(),
		Healthz:    func() error { return ts.healthErr },
		Metrics:    metrics,
		SLIMetrics: kubeletmetrics.SLIRegistry,
		Configz:    testConfigz,
		NodeIPs:    func() []string { return []string{"127.0.0.1"} },
		Clock:      ts.clock,
		Log:        testr.New(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, listener) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	ts.url = "https://" + listener.Addr().String()
	return ts
}

// get sends a request with a client certificate, a bearer token, or
// neither, and returns the status and the body.
func (ts *testServer) do(t *testing.T, method, path string, cert *tls.Certificate, token string) (int, string) {
	t.Helper()
	tlsConfig := &tls.Config{InsecureSkipVerify: true}
	if cert != nil {
		tlsConfig.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 30 * time.Second}
	req, err := http.NewRequestWithContext(t.Context(), method, ts.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, string(body)
}

func (ts *testServer) get(t *testing.T, path string, cert *tls.Certificate) (int, string) {
	t.Helper()
	return ts.do(t, http.MethodGet, path, cert, "")
}

// admin is a client certificate of a cluster admin.
func (ts *testServer) admin(t *testing.T) *tls.Certificate {
	cert := ts.ca.clientCert(t, "kube-apiserver-kubelet-client", "system:masters")
	return &cert
}

// serviceAccountToken makes a ServiceAccount and returns a token of it.
func (ts *testServer) serviceAccountToken(t *testing.T, name string) string {
	t.Helper()
	ctx := t.Context()
	_, err := ts.clientset.CoreV1().ServiceAccounts(ts.namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ts.clientset.CoreV1().ServiceAccounts(ts.namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// grant lets a ServiceAccount get the given Node subresources, and
// returns the binding's name.
func (ts *testServer) grant(t *testing.T, serviceAccount string, subresources ...string) string {
	t.Helper()
	ctx := t.Context()
	name := ts.namespace + "-" + serviceAccount
	var resources []string
	for _, s := range subresources {
		resources = append(resources, "nodes/"+s)
	}
	_, err := ts.clientset.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: resources, Verbs: []string{"get", "create"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ts.clientset.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: ts.namespace}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = ts.clientset.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = ts.clientset.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// eventuallyStatus polls a request until it answers want: the API server's
// RBAC cache takes a moment to see a new binding.
func (ts *testServer) eventuallyStatus(t *testing.T, path, token string, want int) {
	t.Helper()
	await.Eventually(t, 20*time.Second, fmt.Sprintf("GET %s to answer %d", path, want), func(context.Context) error {
		if code, body := ts.do(t, http.MethodGet, path, nil, token); code != want {
			return fmt.Errorf("it answers %d %q", code, body)
		}
		return nil
	})
}

// waitForAccess waits until the API server's own answer to whether user
// may get nodes/<subresource> is want: RBAC sees changes a moment late.
func (ts *testServer) waitForAccess(t *testing.T, user, subresource string, want bool) {
	t.Helper()
	await.Eventually(t, 20*time.Second, fmt.Sprintf("the API server to say %v to %s getting nodes/%s", want, user, subresource), func(ctx context.Context) error {
		review, err := ts.clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: subresource, Name: testNode},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if review.Status.Allowed != want {
			return fmt.Errorf("it says %v", review.Status.Allowed)
		}
		return nil
	})
}

// waitForTokenInvalid waits until the API server no longer takes token.
func (ts *testServer) waitForTokenInvalid(t *testing.T, token string) {
	t.Helper()
	await.Eventually(t, 20*time.Second, "the API server to no longer take the token", func(ctx context.Context) error {
		review, err := ts.clientset.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if review.Status.Authenticated {
			return fmt.Errorf("it still authenticates %s", review.Status.User.Username)
		}
		return nil
	})
}

func TestAuthentication(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})

	if code, body := ts.get(t, "/pods", nil); code != http.StatusUnauthorized || strings.TrimSpace(body) != "Unauthorized" {
		t.Errorf("without credentials: %d %q, want 401 Unauthorized", code, body)
	}
	if code, body := ts.get(t, "/pods", ts.admin(t)); code != http.StatusOK {
		t.Errorf("with the admin's client certificate: %d %q, want 200", code, body)
	}
	stranger := newTestCA(t).clientCert(t, "kube-apiserver-kubelet-client", "system:masters")
	if code, _ := ts.get(t, "/pods", &stranger); code != http.StatusUnauthorized {
		t.Errorf("with a client certificate of another CA: %d, want 401", code)
	}
	if code, _ := ts.do(t, http.MethodGet, "/pods", nil, "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("with a bad token: %d, want 401", code)
	}
	token := ts.serviceAccountToken(t, "viewer")
	ts.grant(t, "viewer", "proxy")
	ts.eventuallyStatus(t, "/pods", token, http.StatusOK)
	// A certificate of another CA does not spoil a good token.
	if code, body := ts.do(t, http.MethodGet, "/pods", &stranger, token); code != http.StatusOK {
		t.Errorf("with a good token and a client certificate of another CA: %d %q, want 200", code, body)
	}
}

func TestAuthorization(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})
	token := ts.serviceAccountToken(t, "stats-reader")

	code, body := ts.do(t, http.MethodGet, "/pods", nil, token)
	wantBody := fmt.Sprintf("Forbidden (user=system:serviceaccount:%s:stats-reader, verb=get, resource=nodes, subresource(s)=[pods proxy])", ts.namespace)
	if code != http.StatusForbidden || strings.TrimSpace(body) != wantBody {
		t.Errorf("a user without any right: %d %q, want 403 %q", code, body, wantBody)
	}

	// nodes/stats opens /stats, and nothing else.
	ts.grant(t, "stats-reader", "stats")
	ts.eventuallyStatus(t, "/stats/summary", token, http.StatusOK)
	if code, _ := ts.do(t, http.MethodGet, "/containerLogs/ns/pod/c", nil, token); code != http.StatusForbidden {
		t.Errorf("container logs with nodes/stats only: %d, want 403", code)
	}
	if code, _ := ts.do(t, http.MethodGet, "/metrics", nil, token); code != http.StatusForbidden {
		t.Errorf("metrics with nodes/stats only: %d, want 403", code)
	}
}

func TestAuthorizationAnswersAreRemembered(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})
	token := ts.serviceAccountToken(t, "operator")

	// A no is remembered for the unauthorized TTL.
	if code, _ := ts.do(t, http.MethodGet, "/healthz", nil, token); code != http.StatusForbidden {
		t.Fatalf("before any grant: %d, want 403", code)
	}
	binding := ts.grant(t, "operator", "healthz")
	user := "system:serviceaccount:" + ts.namespace + ":operator"
	ts.waitForAccess(t, user, "healthz", true)
	ts.clock.Step(29 * time.Second)
	if code, _ := ts.do(t, http.MethodGet, "/healthz", nil, token); code != http.StatusForbidden {
		t.Errorf("29s after a denial: %d, want the remembered 403", code)
	}
	ts.clock.Step(2 * time.Second)
	ts.eventuallyStatus(t, "/healthz", token, http.StatusOK)

	// A yes is remembered for the authorized TTL, even once revoked.
	if err := ts.clientset.RbacV1().ClusterRoleBindings().Delete(t.Context(), binding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ts.waitForAccess(t, user, "healthz", false)
	ts.clock.Step(4 * time.Minute)
	if code, _ := ts.do(t, http.MethodGet, "/healthz", nil, token); code != http.StatusOK {
		t.Errorf("4m after an allowed request, its grant revoked: %d, want the remembered 200", code)
	}
	ts.clock.Step(2 * time.Minute)
	ts.eventuallyStatus(t, "/healthz", token, http.StatusForbidden)
}

func TestTokenReviewsAreRemembered(t *testing.T) {
	ts := newTestServer(t, AuthOptions{AuthorizationMode: v1alpha1.AuthorizationModeAlwaysAllow})
	token := ts.serviceAccountToken(t, "short-lived")
	if code, _ := ts.do(t, http.MethodGet, "/healthz", nil, token); code != http.StatusOK {
		t.Fatalf("with a valid token: %d, want 200", code)
	}
	// The token dies with its ServiceAccount, but the review is
	// remembered for the cache TTL.
	if err := ts.clientset.CoreV1().ServiceAccounts(ts.namespace).Delete(t.Context(), "short-lived", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ts.waitForTokenInvalid(t, token)
	ts.clock.Step(time.Minute)
	if code, _ := ts.do(t, http.MethodGet, "/healthz", nil, token); code != http.StatusOK {
		t.Errorf("a minute after the review: %d, want the remembered 200", code)
	}
	ts.clock.Step(2 * time.Minute)
	ts.eventuallyStatus(t, "/healthz", token, http.StatusUnauthorized)
}

func TestAnonymousRequests(t *testing.T) {
	ts := newTestServer(t, AuthOptions{Anonymous: true})
	code, body := ts.get(t, "/pods", nil)
	if code != http.StatusForbidden || !strings.Contains(body, "user=system:anonymous") {
		t.Errorf("an anonymous request: %d %q, want 403 for system:anonymous", code, body)
	}
}

// logFile writes a CRI log file and returns its path.
func (ts *testServer) logFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(ts.logDir, name)
	if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// addPod creates Pod web on this node, with container app running as
// c-new after c-old exited, and its runtime record; logs are the two
// instances' log contents.
func (ts *testServer) addPod(t *testing.T, oldLog, newLog string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	pod, err := ts.clientset.CoreV1().Pods(ts.namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			NodeName: testNode,
			Containers: []corev1.Container{
				{Name: "app", Image: "busybox"},
				{Name: "waiting", Image: "busybox"},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{
			Name: "app", ContainerID: "containerd://c-new",
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://c-old"}},
		},
		{Name: "waiting", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
	}
	if pod, err = ts.clientset.CoreV1().Pods(ts.namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{
		kubecontainer.LabelPodUID:        string(pod.UID),
		kubecontainer.LabelPodName:       pod.Name,
		kubecontainer.LabelPodNamespace:  pod.Namespace,
		kubecontainer.LabelContainerName: "app",
	}
	ts.runtime.SetFakeContainers([]*critesting.FakeContainer{
		{ContainerStatus: runtimeapi.ContainerStatus{Id: "c-old", State: runtimeapi.ContainerState_CONTAINER_EXITED,
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Labels: labels, LogPath: ts.logFile(t, "0.log", oldLog)}},
		{ContainerStatus: runtimeapi.ContainerStatus{Id: "c-new", State: runtimeapi.ContainerState_CONTAINER_RUNNING,
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Labels: labels, LogPath: ts.logFile(t, "1.log", newLog)}},
	})
	return pod
}

func TestContainerLogs(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})
	ts.addPod(t,
		"2026-11-22T01:00:00Z stdout F before the restart\n",
		"2026-11-22T01:00:01Z stdout F one\n2026-11-22T01:00:02Z stderr F two\n2026-11-22T01:00:03Z stdout F three\n")
	admin := ts.admin(t)
	base := "/containerLogs/" + ts.namespace + "/web/"
	tests := map[string]struct {
		path     string
		wantCode int
		wantBody string
	}{
		"the running container's log": {path: "app", wantCode: 200, wantBody: "one\ntwo\nthree\n"},
		"the last line":               {path: "app?tailLines=1", wantCode: 200, wantBody: "three\n"},
		"the old name of tail":        {path: "app?tail=2", wantCode: 200, wantBody: "two\nthree\n"},
		"with timestamps": {path: "app?timestamps=true&tailLines=1", wantCode: 200,
			wantBody: "2026-11-22T01:00:03.000000000Z three\n"},
		"since a time":             {path: "app?sinceTime=2026-11-22T01:00:02Z", wantCode: 200, wantBody: "two\nthree\n"},
		"a few bytes":              {path: "app?limitBytes=6", wantCode: 200, wantBody: "one\ntw"},
		"the previous instance":    {path: "app?previous=true", wantCode: 200, wantBody: "before the restart\n"},
		"an unknown pod":           {path: "../nope/app", wantCode: 404, wantBody: "pod \"nope\" does not exist\n"},
		"an unknown container":     {path: "nope", wantCode: 404, wantBody: "container \"nope\" not found in pod \"web\"\n"},
		"a container yet to start": {path: "waiting", wantCode: 400, wantBody: "container \"waiting\" in pod \"web\" is waiting to start: trying and failing to pull image\n"},
		"invalid options":          {path: "app?tailLines=-1", wantCode: 422},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body := ts.get(t, base+tc.path, admin)
			if code != tc.wantCode {
				t.Fatalf("GET %s: %d %q, want %d", tc.path, code, body, tc.wantCode)
			}
			if tc.wantBody != "" && body != tc.wantBody {
				t.Errorf("GET %s: body %q, want %q", tc.path, body, tc.wantBody)
			}
		})
	}
}

func TestFollowedContainerLogs(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})
	ts.addPod(t, "", "2026-11-22T01:00:01Z stdout F one\n")
	cert := ts.admin(t)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{*cert}}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.url+"/containerLogs/"+ts.namespace+"/web/app?follow=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	readLine := func() string {
		t.Helper()
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the followed log: %v", err)
		}
		return line
	}
	if line := readLine(); line != "one\n" {
		t.Errorf("first line %q, want one", line)
	}
	f, err := os.OpenFile(filepath.Join(ts.logDir, "1.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("2026-11-22T01:00:02Z stdout F two\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if line := readLine(); line != "two\n" {
		t.Errorf("followed line %q, want two", line)
	}
	// Once the container stops, the response ends.
	ts.runtime.Lock()
	ts.runtime.Containers["c-new"].State = runtimeapi.ContainerState_CONTAINER_EXITED
	ts.runtime.Unlock()
	if rest, err := io.ReadAll(lines); err != nil || len(rest) != 0 {
		t.Errorf("after the container stopped: %q, %v; want the end of the response", rest, err)
	}
}

func TestStreamingErrors(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})
	ts.addPod(t, "", "")
	admin := ts.admin(t)
	tests := map[string]struct {
		method, path string
		wantCode     int
		wantBody     string
	}{
		"exec without a stream":           {"POST", "/exec/" + ts.namespace + "/web/app?command=ls", 400, "you must specify at least 1 of stdin, stdout, stderr\n"},
		"exec in an unknown pod":          {"POST", "/exec/" + ts.namespace + "/nope/app?command=ls&output=1", 404, "pod does not exist\n"},
		"exec in a container not running": {"POST", "/exec/" + ts.namespace + "/web/waiting?command=ls&output=1", 500, "container not found (\"waiting\")\n"},
		"attach to an unknown pod":        {"POST", "/attach/" + ts.namespace + "/nope/app?output=1", 404, "pod does not exist\n"},
		"port-forward to another uid":     {"POST", "/portForward/" + ts.namespace + "/web/other-uid", 404, "pod not found\n"},
		"port-forward to a bad port":      {"GET", "/portForward/" + ts.namespace + "/web?port=0", 400, "port \"0\" must be > 0\n"},
		"run in an unknown pod":           {"POST", "/run/" + ts.namespace + "/nope/app?cmd=ls", 404, "pod does not exist\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body := ts.do(t, tc.method, tc.path, admin, "")
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

// TestExecRelaysTheUpgradedConnection checks that an exec reaches the
// runtime's streaming URL with its options and that bytes then flow both
// ways: the protocol itself is the runtime's.
func TestExecRelaysTheUpgradedConnection(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})
	ts.addPod(t, "", "")
	queries := make(chan string, 1)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries <- r.URL.Path + "?" + r.URL.RawQuery
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprint(buf, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\n\r\n")
		buf.Flush()
		line, _ := buf.ReadString('\n')
		fmt.Fprint(buf, "echo: "+line)
		buf.Flush()
	}))
	defer upstream.Close()
	ts.runtime.streamURL = upstream.URL

	cert := ts.admin(t)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(ts.url, "https://"), &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{*cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /exec/%s/web/app?command=ls&input=1&output=1 HTTP/1.1\r\nHost: node\r\nConnection: Upgrade\r\nUpgrade: test-stream\r\nContent-Length: 0\r\n\r\n", ts.namespace)
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("exec: %d %q, want 101", resp.StatusCode, body)
	}
	// The runtime holds the exec's options under its URL's token.
	if got := <-queries; got != "/exec/token?" {
		t.Errorf("the runtime was asked %q, want its streaming URL", got)
	}
	fmt.Fprint(conn, "hello\n")
	line, err := reader.ReadString('\n')
	if err != nil || line != "echo: hello\n" {
		t.Errorf("through the relay: %q, %v; want the runtime's echo", line, err)
	}
}

func TestNodeEndpoints(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})
	pod := ts.addPod(t, "", "")
	// A pod of another node is not listed.
	if _, err := ts.clientset.CoreV1().Pods(ts.namespace).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"},
		Spec:       corev1.PodSpec{NodeName: "n2", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admin := ts.admin(t)

	code, body := ts.get(t, "/pods", admin)
	var list corev1.PodList
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil {
		t.Fatalf("/pods: %d %v", code, err)
	}
	var names []string
	for _, p := range list.Items {
		if p.Namespace == ts.namespace {
			names = append(names, p.Name)
		}
	}
	if list.Kind != "PodList" || len(names) != 1 || names[0] != pod.Name {
		t.Errorf("/pods lists %s %v in the test namespace, want a PodList of [web]", list.Kind, names)
	}

	if code, body := ts.get(t, "/healthz", admin); code != http.StatusOK || body != "ok" {
		t.Errorf("/healthz: %d %q, want 200 ok", code, body)
	}
	ts.healthErr = fmt.Errorf("the PLEG is stuck")
	if code, body := ts.get(t, "/healthz", admin); code != http.StatusInternalServerError || !strings.Contains(body, "the PLEG is stuck") {
		t.Errorf("/healthz of an unhealthy nodelet: %d %q, want 500 naming why", code, body)
	}

	// The two /healthz answers above, as every component's SLIs.
	if code, body := ts.get(t, "/metrics/slis", admin); code != http.StatusOK ||
		!strings.Contains(body, `kubernetes_healthcheck{name="syncloop",type="healthz"} 0`) ||
		!strings.Contains(body, `kubernetes_healthchecks_total{name="syncloop",status="error",type="healthz"}`) ||
		!strings.Contains(body, `kubernetes_healthcheck{name="ping",type="healthz"} 1`) {
		t.Errorf("/metrics/slis: %d, want the failed syncloop check and the ping; got:\n%s", code, body)
	}
	if code, body := ts.get(t, "/metrics", admin); code != http.StatusOK || !strings.Contains(body, "nodelet_test_total 0") {
		t.Errorf("/metrics: %d, want nodelet's own metrics; got:\n%s", code, body)
	}
	code, body = ts.get(t, "/stats/summary", admin)
	var summary struct {
		Node struct {
			NodeName string `json:"nodeName"`
		} `json:"node"`
	}
	if err := json.Unmarshal([]byte(body), &summary); code != http.StatusOK || err != nil || summary.Node.NodeName != testNode {
		t.Errorf("/stats/summary: %d %v %q, want the node's summary", code, err, body)
	}
	if code, body := ts.get(t, "/metrics/resource", admin); code != http.StatusOK || !strings.Contains(body, "node_cpu_usage_seconds_total") {
		t.Errorf("/metrics/resource: %d, want the resource metrics; got:\n%s", code, body)
	}
	if code, _ := ts.get(t, "/no/such/endpoint", admin); code != http.StatusNotFound {
		t.Errorf("an unknown endpoint: %d, want 404", code)
	}
}

// testConfigz stands for nodelet's configuration: the server serves
// whatever it is given.
var testConfigz = map[string]any{"apiVersion": "config.nodelet.dev/v1alpha1", "kind": "NodeletConfiguration", "maxPods": 42}

func TestConfigz(t *testing.T) {
	ts := newTestServer(t, AuthOptions{})

	code, body := ts.get(t, "/configz", ts.admin(t))
	var got map[string]map[string]any
	if err := json.Unmarshal([]byte(body), &got); code != http.StatusOK || err != nil {
		t.Fatalf("/configz: %d %v %q, want 200 and JSON", code, err, body)
	}
	want := map[string]map[string]any{"nodeletconfig": {"apiVersion": "config.nodelet.dev/v1alpha1", "kind": "NodeletConfiguration", "maxPods": float64(42)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/configz (-want +got):\n%s", diff)
	}

	// As the kubelet's: nodes/configz or nodes/proxy opens it, nodes/stats
	// does not. Access is checked with the API server before asking, as
	// the server remembers a no.
	serviceAccount := func(name, subresource string) string {
		token := ts.serviceAccountToken(t, name)
		ts.grant(t, name, subresource)
		ts.waitForAccess(t, "system:serviceaccount:"+ts.namespace+":"+name, subresource, true)
		return token
	}
	statsToken := serviceAccount("stats-reader", "stats")
	wantBody := fmt.Sprintf("Forbidden (user=system:serviceaccount:%s:stats-reader, verb=get, resource=nodes, subresource(s)=[configz proxy])", ts.namespace)
	if code, body := ts.do(t, http.MethodGet, "/configz", nil, statsToken); code != http.StatusForbidden || strings.TrimSpace(body) != wantBody {
		t.Errorf("/configz with nodes/stats only: %d %q, want 403 %q", code, body, wantBody)
	}
	for _, subresource := range []string{"configz", "proxy"} {
		token := serviceAccount(subresource+"-reader", subresource)
		if code, body := ts.do(t, http.MethodGet, "/configz", nil, token); code != http.StatusOK {
			t.Errorf("/configz with nodes/%s: %d %q, want 200", subresource, code, body)
		}
	}
}
