package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/volume"
)

// auditEvent is what the tests read of an API server audit log line.
type auditEvent struct {
	Stage      string           `json:"stage"`
	ReceivedAt metav1.MicroTime `json:"requestReceivedTimestamp"`
	// AnsweredAt is the time of the stage logged, ResponseComplete.
	AnsweredAt metav1.MicroTime `json:"stageTimestamp"`
	Verb       string           `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// RequestObject is logged only for the requests the stack's audit
	// policy logs at level Request: the node's status patches.
	RequestObject json.RawMessage `json:"requestObject"`
}

// nodeCall is one completed request of the node: what it was, as "verb
// resource[/subresource] name code", and when the API server received it.
type nodeCall struct {
	what string
	at   time.Time
}

// nodeCalls reads the requests the node made about objects of namespace
// ns from the API server's audit log, in the order they were logged.
func (f *Framework) nodeCalls(t *testing.T, ns string) []nodeCall {
	t.Helper()
	var calls []nodeCall
	for _, e := range f.nodeAuditEvents(t, ns) {
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		calls = append(calls, nodeCall{
			what: fmt.Sprintf("%s %s %s %d", e.Verb, resource, e.ObjectRef.Name, code),
			at:   e.ReceivedAt.Time,
		})
	}
	return calls
}

// nodeAuditEvents reads the audit log's events of the requests the node
// made about objects of namespace ns, once answered, in the order they
// were logged.
func (f *Framework) nodeAuditEvents(t *testing.T, ns string) []auditEvent {
	t.Helper()
	if f.Env.AuditLog == "" {
		t.Fatal("the stack's env file names no AUDIT_LOG")
	}
	file, err := os.Open(f.Env.AuditLog)
	if err != nil {
		t.Fatalf("opening the audit log: %v", err)
	}
	defer file.Close()
	user := "system:node:" + f.Env.NodeName
	var events []auditEvent
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		// Most lines are other tests'; decode only the candidates.
		if !strings.Contains(string(line), ns) || !strings.Contains(string(line), user) {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("audit log line %q: %v", line, err)
		}
		if e.Stage != "ResponseComplete" || e.User.Username != user || e.ObjectRef == nil || e.ObjectRef.Namespace != ns {
			continue
		}
		events = append(events, e)
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	return events
}

// auditLogIsWhole fails the test when the API server dropped audit events
// (the stack writes its audit log from a queue, which drops them when
// full): what a test read from the log would be short.
func (f *Framework) auditLogIsWhole(t *testing.T) {
	t.Helper()
	raw, err := f.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	for _, line := range grepLines(string(raw), "apiserver_audit_error_total{") {
		fields := strings.Fields(line)
		if n, err := strconv.ParseFloat(fields[len(fields)-1], 64); err != nil || n != 0 {
			t.Errorf("the API server's audit log misses events: %s", line)
		}
	}
}

// A pod whose env and volumes use a ConfigMap and a Secret: the node reads
// each object once for its volume and once for its env, asks for one
// token, and never lists or watches Secrets or ConfigMaps. The counts come
// from the API server's audit log and are logged.
func TestAPICallsOfOnePodStart(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	f.createConfigMap(t, ns, "settings", map[string]string{"mode": "fast"})
	f.createSecret(t, ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"user": []byte("alice")}})
	pod := newPod(ns, "counted").obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
	}}}}
	app := &pod.Spec.Containers[0]
	app.VolumeMounts = []corev1.VolumeMount{{Name: "settings", MountPath: "/settings"}}
	app.Env = []corev1.EnvVar{configMapKeyEnv("MODE", "settings", "mode", false), secretKeyEnv("USER", "creds", "user")}
	app.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}
	pod = f.createPod(t, pod)
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	calls := f.nodeCalls(t, ns)
	f.auditLogIsWhole(t)
	counts := map[string]int{}
	for _, call := range calls {
		counts[call.what]++
	}
	var lines []string
	for call, n := range counts {
		lines = append(lines, fmt.Sprintf("%3d × %s", n, call))
	}
	sort.Strings(lines)
	t.Logf("the node's %d requests about namespace %s until the pod was Ready:\n\t%s", len(calls), ns, strings.Join(lines, "\n\t"))

	// The Node authorizer learns of a pod's binding a moment after the
	// node does, and refuses its first reads until then: each refused
	// round of volume set-ups is retried, and may read again what the
	// refused round did read.
	refused := 0
	for _, call := range calls {
		fields := strings.Fields(call.what)
		verb, resource, code := fields[0], fields[1], fields[len(fields)-1]
		if (resource == "secrets" || resource == "configmaps" || resource == "services") && verb != "get" {
			t.Errorf("the node made %q: it must read Secrets and ConfigMaps one by one, and Services from its informer", call.what)
		}
		if code == "403" {
			refused++
		}
	}
	if refused > 3 {
		t.Errorf("%d requests refused, want at most the few of the first moment", refused)
	}
	// A pod slow to start (the runtime is busy with the parallel tests'
	// pods) has its ConfigMap volumes rewritten each sync period until
	// then, reading their ConfigMaps again: one more read of each for
	// every period the node's reads spanned.
	resyncs := 0
	if len(calls) > 0 {
		resyncs = int(calls[len(calls)-1].at.Sub(calls[0].at) / volume.DefaultSyncPeriod)
	}
	want := map[string]int{
		// The volume, then the containers' env (both its keyRef and its
		// envFrom) once.
		"get configmaps settings 200": 2,
		"get secrets creds 200":       1,
		// The service account token's projected volume.
		"get configmaps kube-root-ca.crt 200":      1,
		"create serviceaccounts/token default 201": 1,
	}
	for call, n := range want {
		extra := refused
		if strings.HasPrefix(call, "get configmaps") {
			extra += resyncs
		}
		if counts[call] < n || counts[call] > n+extra {
			t.Errorf("%q made %d times, want %d (and at most one more for each of the %d refused requests and, for a ConfigMap, the %d sync periods the reads spanned)", call, counts[call], n, refused, resyncs)
		}
	}
}
