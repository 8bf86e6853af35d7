package server

// Table tests of the server's pure decisions: which Node subresources a
// request needs, which container instance's log is read, how the query
// options are read. No cluster, no runtime.

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/server/logs"
)

func TestRequestAttributes(t *testing.T) {
	type testCase struct {
		method, path string
		want         []attributes
	}
	tests := map[string]testCase{
		"container logs need proxy":         {"GET", "/containerLogs/ns/pod/c", []attributes{{"get", "proxy"}}},
		"stats":                             {"GET", "/stats/summary", []attributes{{"get", "stats"}}},
		"metrics":                           {"GET", "/metrics", []attributes{{"get", "metrics"}}},
		"resource metrics":                  {"GET", "/metrics/resource", []attributes{{"get", "metrics"}}},
		"pods, or proxy":                    {"GET", "/pods", []attributes{{"get", "pods"}, {"get", "proxy"}}},
		"healthz, or proxy":                 {"GET", "/healthz", []attributes{{"get", "healthz"}, {"get", "proxy"}}},
		"configz, or proxy":                 {"GET", "/configz", []attributes{{"get", "configz"}, {"get", "proxy"}}},
		"system logs":                       {"GET", "/logs/messages", []attributes{{"get", "log"}}},
		"a path that only starts alike":     {"GET", "/statsfoo", []attributes{{"get", "proxy"}}},
		"HEAD is a get":                     {"HEAD", "/containerLogs/ns/pod/c", []attributes{{"get", "proxy"}}},
		"other methods":                     {"DELETE", "/containerLogs/ns/pod/c", []attributes{{"delete", "proxy"}}},
		"a path that only starts like exec": {"GET", "/execfoo/ns/pod/c", []attributes{{"get", "proxy"}}},
		"streaming by any other method":     {"DELETE", "/run/ns/pod/c", []attributes{{"create", "proxy"}}},
	}
	// The streaming endpoints are a create on nodes/proxy, whatever the
	// method: GET opens them over WebSocket, POST over SPDY. Stricter
	// than the kubelet, which takes a WebSocket GET as get nodes/proxy.
	for _, path := range []string{
		"/exec/ns/pod/c", "/exec/ns/pod/uid/c", "/attach/ns/pod/c", "/attach/ns/pod/uid/c",
		"/portForward/ns/pod", "/portForward/ns/pod/uid", "/run/ns/pod/c", "/run/ns/pod/uid/c",
	} {
		for _, method := range []string{"GET", "HEAD", "POST"} {
			tests[method+" "+path+" is a create"] = testCase{method, path, []attributes{{"create", "proxy"}}}
		}
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, requestAttributes(tc.method, tc.path)); diff != "" {
				t.Errorf("requestAttributes(%s %s) (-want +got):\n%s", tc.method, tc.path, diff)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	for header, want := range map[string]string{
		"Bearer abc":  "abc",
		"bearer  abc": "abc",
		"Basic abc":   "",
		"Bearer ":     "",
		"":            "",
	} {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", header)
		got, ok := bearerToken(r)
		if got != want || ok != (want != "") {
			t.Errorf("bearerToken(%q) = %q, %v; want %q", header, got, ok, want)
		}
	}
}

// logPod is a pod whose container "app" is in the given state, with the
// given last termination.
func logPod(state corev1.ContainerState, last *corev1.ContainerStateTerminated) *corev1.Pod {
	status := corev1.ContainerStatus{Name: "app", State: state}
	if state.Running != nil {
		status.ContainerID = "containerd://running"
	}
	if last != nil {
		status.LastTerminationState.Terminated = last
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{status}},
	}
}

func TestLogContainerID(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	exited := &corev1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://exited"}
	tests := map[string]struct {
		pod       *corev1.Pod
		container string
		previous  bool
		want      string
		wantErr   string
	}{
		"the running instance": {
			pod: logPod(running, exited), want: "running",
		},
		"the previous instance": {
			pod: logPod(running, exited), previous: true, want: "exited",
		},
		"no previous instance": {
			pod: logPod(running, nil), previous: true,
			wantErr: `previous terminated container "app" in pod "web" not found`,
		},
		"a finished container": {
			pod: logPod(corev1.ContainerState{Terminated: exited}, nil), want: "exited",
		},
		"waiting to restart: the last one that ran": {
			pod: logPod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, exited), want: "exited",
		},
		"waiting to start": {
			pod:     logPod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}, nil),
			wantErr: `container "app" in pod "web" is waiting to start: ContainerCreating`,
		},
		"an image that cannot be pulled": {
			pod:     logPod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}, nil),
			wantErr: `container "app" in pod "web" is waiting to start: image can't be pulled`,
		},
		"no status yet": {
			pod: logPod(running, nil), container: "other",
			wantErr: `container "other" in pod "web" is not available`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			container := tc.container
			if container == "" {
				container = "app"
			}
			got, err := logContainerID(tc.pod, container, tc.previous)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("logContainerID error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("logContainerID = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestDecodeAndValidateLogOptions(t *testing.T) {
	sinceTime := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	tests := map[string]struct {
		query       string
		want        *corev1.PodLogOptions
		wantInvalid bool
	}{
		"nothing": {query: "", want: &corev1.PodLogOptions{}},
		"what kubectl sends": {
			query: "container=app&follow=true&tailLines=10&timestamps=true&limitBytes=100&sinceSeconds=60&previous=false",
			want: &corev1.PodLogOptions{Container: "app", Follow: true, TailLines: ptr.To[int64](10), Timestamps: true,
				LimitBytes: ptr.To[int64](100), SinceSeconds: ptr.To[int64](60)},
		},
		"since a time": {
			query: "sinceTime=2026-11-22T01:02:03Z",
			want:  &corev1.PodLogOptions{SinceTime: &metav1.Time{Time: sinceTime}},
		},
		"a bare boolean is true": {query: "follow=", want: &corev1.PodLogOptions{Follow: true}},
		"a stream":               {query: "stream=Stderr", want: &corev1.PodLogOptions{Stream: ptr.To("Stderr")}},
		"both sinces":            {query: "sinceSeconds=1&sinceTime=2026-11-22T01:02:03Z", wantInvalid: true},
		"negative tail":          {query: "tailLines=-1", wantInvalid: true},
		"no bytes":               {query: "limitBytes=0", wantInvalid: true},
		"a stream and a tail":    {query: "stream=Stdout&tailLines=1", wantInvalid: true},
		"an unknown stream":      {query: "stream=Stdin", wantInvalid: true},
		"not a number":           {query: "tailLines=ten", wantInvalid: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			query, err := url.ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeLogOptions(query)
			if err == nil {
				err = validateLogOptions(got)
			}
			if tc.wantInvalid {
				if err == nil {
					t.Errorf("options %q accepted as %+v, want an error", tc.query, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("options %q: %v", tc.query, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decodeLogOptions(%q) (-want +got):\n%s", tc.query, diff)
			}
		})
	}
}

func TestReadOptions(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	got := readOptions(&corev1.PodLogOptions{SinceSeconds: ptr.To[int64](30), TailLines: ptr.To[int64](5), Follow: true}, now)
	want := logs.Options{Since: now.Add(-30 * time.Second), TailLines: ptr.To[int64](5), Follow: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readOptions (-want +got):\n%s", diff)
	}
}

func TestParseStreamOptions(t *testing.T) {
	tests := map[string]struct {
		query   string
		want    streamOptions
		wantErr bool
	}{
		"exec with output":           {query: "output=1&error=1", want: streamOptions{Stdout: true, Stderr: true}},
		"exec -i":                    {query: "input=1&output=1&error=1", want: streamOptions{Stdin: true, Stdout: true, Stderr: true}},
		"a tty merges stderr":        {query: "input=1&output=1&error=1&tty=1", want: streamOptions{Stdin: true, Stdout: true, TTY: true}},
		"no stream at all":           {query: "tty=1", wantErr: true},
		"the client-side names fail": {query: "stdout=1", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			query, _ := url.ParseQuery(tc.query)
			got, err := parseStreamOptions(query)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parseStreamOptions(%q) error = %v, want error %v", tc.query, err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("parseStreamOptions(%q) = %+v, want %+v", tc.query, got, tc.want)
			}
		})
	}
}

func TestParsePorts(t *testing.T) {
	tests := map[string]struct {
		query   string
		want    []int32
		wantErr bool
	}{
		"none (SPDY)":    {query: ""},
		"one":            {query: "port=80", want: []int32{80}},
		"several":        {query: "port=80,8080&port=9090", want: []int32{80, 8080, 9090}},
		"empty":          {query: "port=", wantErr: true},
		"zero":           {query: "port=0", wantErr: true},
		"too big":        {query: "port=70000", wantErr: true},
		"not a number":   {query: "port=http", wantErr: true},
		"a trailing sep": {query: "port=80,", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			query, _ := url.ParseQuery(tc.query)
			got, err := parsePorts(query)
			if (err != nil) != tc.wantErr {
				t.Fatalf("parsePorts(%q) error = %v, want error %v", tc.query, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); err == nil && diff != "" {
				t.Errorf("parsePorts(%q) (-want +got):\n%s", tc.query, diff)
			}
		})
	}
}

func TestServingCertificateRequest(t *testing.T) {
	if got := servingCertificateRequest("n1", nil); got != nil {
		t.Errorf("a request without any IP = %+v, want none until the node has one", got)
	}
	got := servingCertificateRequest("n1", []string{"10.0.0.5", "not an ip"})
	if got.Subject.CommonName != "system:node:n1" || len(got.Subject.Organization) != 1 || got.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject = %+v, want system:node:n1 in system:nodes", got.Subject)
	}
	if len(got.IPAddresses) != 1 || got.IPAddresses[0].String() != "10.0.0.5" || len(got.DNSNames) != 1 || got.DNSNames[0] != "n1" {
		t.Errorf("names = %v %v, want n1 and 10.0.0.5", got.DNSNames, got.IPAddresses)
	}
}
