package runtime

// Hooks, stop order, grace periods, ephemeral containers and termination
// messages, against the CRI fake of k8s.io/cri-api/pkg/apis/testing
// wrapped to script ExecSync and to record each StopContainer; HTTP hooks
// against a net/http/httptest server; termination messages from files in
// t.TempDir().

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// hookRuntime scripts ExecSync and records the stops it is asked for, in
// the order they return.
type hookRuntime struct {
	*recordingRuntime
	exec func(containerID string, cmd []string) ([]byte, error)

	mu    sync.Mutex
	stops []stop
}

type stop struct {
	Name  string
	Grace int64
}

func (r *hookRuntime) ExecSync(_ context.Context, containerID string, cmd []string, _ time.Duration) ([]byte, []byte, error) {
	out, err := r.exec(containerID, cmd)
	return out, nil, err
}

func (r *hookRuntime) StopContainer(ctx context.Context, id string, timeout int64) error {
	status, err := r.FakeRuntimeService.ContainerStatus(ctx, id, false)
	if err != nil {
		return err
	}
	if err := r.FakeRuntimeService.StopContainer(ctx, id, timeout); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stops = append(r.stops, stop{Name: status.GetStatus().GetMetadata().GetName(), Grace: timeout})
	return nil
}

func (r *hookRuntime) stopped() []stop {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stop(nil), r.stops...)
}

func newHookTestEnv(t *testing.T, exec func(string, []string) ([]byte, error)) (*syncTestEnv, *hookRuntime) {
	e := newSyncTestEnv(t)
	if exec == nil {
		exec = func(string, []string) ([]byte, error) { return nil, nil }
	}
	rt := &hookRuntime{recordingRuntime: e.runtime, exec: exec}
	e.m.runtime = rt
	return e, rt
}

// startPod runs the pod's plan through SyncPod and returns what the
// runtime holds after it.
func startPod(t *testing.T, e *syncTestEnv, pod *corev1.Pod) (SyncResult, *kubecontainer.PodStatus) {
	t.Helper()
	ctx := context.Background()
	before, err := e.m.GetPodStatus(ctx, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	result := e.m.SyncPod(ctx, pod, before, ComputePodActions(pod, before, nil, e.clock.Now()), &PodEnv{})
	after, err := e.m.GetPodStatus(ctx, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	return result, after
}

func TestFailingPostStartHookKillsTheContainer(t *testing.T) {
	e, rt := newHookTestEnv(t, func(_ string, cmd []string) ([]byte, error) {
		return []byte("no config\n"), utilexec.CodeExitError{Err: errors.New("command 'setup' exited with 2: "), Code: 2}
	})
	pod := syncTestPod()
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"setup"}}}}

	result, after := startPod(t, e, pod)
	want := &kubecontainer.ContainerError{
		Reason:  ReasonPostStartHookError,
		Message: `Exec lifecycle hook ([setup]) for Container "app" in Pod "web_default(uid-1)" failed - error: command 'setup' exited with 2: , message: "no config\n"`,
	}
	if diff := cmp.Diff(want, result.ContainerErrors["app"]); diff != "" {
		t.Errorf("container error mismatch (-want +got):\n%s", diff)
	}
	if c := after.LatestContainer("app"); c == nil || c.State != kubecontainer.ContainerExited {
		t.Errorf("container after its hook failed = %+v, want it killed", c)
	}
	if diff := cmp.Diff([]stop{{Name: "app", Grace: 30}}, rt.stopped()); diff != "" {
		t.Errorf("stops mismatch (-want +got):\n%s", diff)
	}
	events := drainEvents(e.recorder)
	wantTail := []string{"Normal Started Container started", "Warning FailedPostStartHook PostStartHook failed", "Normal Killing FailedPostStartHook"}
	if len(events) < 3 || !cmp.Equal(wantTail, events[len(events)-3:]) {
		t.Errorf("events = %q, want them to end with %q", events, wantTail)
	}
}

func TestHTTPPostStartHookCallsThePod(t *testing.T) {
	var mu sync.Mutex
	var got []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.URL.Path+" "+r.Header.Get("User-Agent"))
		// Any answer counts, as in the kubelet.
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer server.Close()
	u, _ := url.Parse(server.URL)
	port, _ := strconv.Atoi(u.Port())

	e, _ := newHookTestEnv(t, nil)
	pod := syncTestPod()
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		HTTPGet: &corev1.HTTPGetAction{Host: u.Hostname(), Port: intstr.FromInt(port), Path: "/started"},
	}}
	result, after := startPod(t, e, pod)
	if result.Err != nil {
		t.Fatalf("SyncPod() error = %v", result.Err)
	}
	if c := after.LatestContainer("app"); c == nil || c.State != kubecontainer.ContainerRunning {
		t.Errorf("container = %+v, want running", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"/started kube-lifecycle/1.36"}, got); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
}

func TestPreStopHookRunsFirstAndItsTimeComesOutOfTheGracePeriod(t *testing.T) {
	var e *syncTestEnv
	var ran []string
	e, rt := newHookTestEnv(t, func(_ string, cmd []string) ([]byte, error) {
		ran = append(ran, cmd[0])
		// The hook takes 7 seconds.
		e.clock.Step(7 * time.Second)
		return nil, nil
	})
	pod := syncTestPod()
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}}}
	_, running := startPod(t, e, pod)

	if err := e.m.KillPod(context.Background(), pod, running, nil); err != nil {
		t.Fatalf("KillPod() error = %v", err)
	}
	if diff := cmp.Diff([]string{"drain"}, ran); diff != "" {
		t.Errorf("hooks run mismatch (-want +got):\n%s", diff)
	}
	// 10s of grace, 7 taken by the hook.
	if diff := cmp.Diff([]stop{{Name: "app", Grace: 3}}, rt.stopped()); diff != "" {
		t.Errorf("stops mismatch (-want +got):\n%s", diff)
	}
}

func TestFailingPreStopHookStillStopsTheContainer(t *testing.T) {
	e, rt := newHookTestEnv(t, func(string, []string) ([]byte, error) {
		return nil, utilexec.CodeExitError{Err: errors.New("exited with 1"), Code: 1}
	})
	pod := syncTestPod()
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"drain"}}}}
	_, running := startPod(t, e, pod)
	drainEvents(e.recorder)

	if err := e.m.KillPod(context.Background(), pod, running, ptr.To[int64](5)); err != nil {
		t.Fatalf("KillPod() error = %v", err)
	}
	if diff := cmp.Diff([]stop{{Name: "app", Grace: 5}}, rt.stopped()); diff != "" {
		t.Errorf("stops mismatch (-want +got):\n%s", diff)
	}
	want := []string{"Normal Killing Stopping container app", "Warning FailedPreStopHook PreStopHook failed"}
	if diff := cmp.Diff(want, drainEvents(e.recorder)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestKillPodStopsSidecarsAfterTheAppInReverseOrder(t *testing.T) {
	e, rt := newHookTestEnv(t, nil)
	pod := syncTestPod()
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "first", Image: "busybox:1", RestartPolicy: always},
		{Name: "init", Image: "busybox:1"},
		{Name: "second", Image: "busybox:1", RestartPolicy: always},
	}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "other", Image: "busybox:1"})
	// All running in one sandbox, as after the pod started.
	ctx := context.Background()
	status := &kubecontainer.PodStatus{UID: pod.UID}
	actions := ComputePodActions(pod, status, nil, e.clock.Now())
	actions.InitContainersToStart = []ContainerToStart{{Index: 0}, {Index: 2}}
	actions.ContainersToStart = []ContainerToStart{{Index: 0}, {Index: 1}}
	if result := e.m.SyncPod(ctx, pod, status, actions, &PodEnv{}); result.Err != nil {
		t.Fatal(result.Err)
	}
	running, err := e.m.GetPodStatus(ctx, pod.UID)
	if err != nil || len(running.RunningContainers()) != 4 {
		t.Fatalf("running containers = %d (%v), want 4", len(running.RunningContainers()), err)
	}

	if err := e.m.KillPod(ctx, pod, running, nil); err != nil {
		t.Fatalf("KillPod() error = %v", err)
	}
	stops := rt.stopped()
	var order []string
	for _, s := range stops {
		order = append(order, s.Name)
	}
	// The regular containers stop in any order, first; then the sidecars,
	// the last one first.
	if len(order) != 4 || !(order[0] == "app" && order[1] == "other" || order[0] == "other" && order[1] == "app") ||
		order[2] != "second" || order[3] != "first" {
		t.Errorf("stop order = %v, want app and other, then second, then first", order)
	}
}

func TestProbeKillUsesTheProbesGracePeriod(t *testing.T) {
	cases := map[string]struct {
		reason  KillReason
		deleted bool
		want    int64
	}{
		"liveness: the probe's own":             {reason: KillReasonLivenessProbe, want: 4},
		"startup: the probe's own":              {reason: KillReasonStartupProbe, want: 6},
		"no probe reason: the pod's":            {want: 30},
		"a delete's own grace period wins over": {reason: KillReasonLivenessProbe, deleted: true, want: 12},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := syncTestPod()
			c := &pod.Spec.Containers[0]
			c.LivenessProbe = &corev1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](4)}
			c.StartupProbe = &corev1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](6)}
			if tc.deleted {
				pod.DeletionTimestamp = ptr.To(metav1.Now())
				pod.DeletionGracePeriodSeconds = ptr.To[int64](12)
			}
			if got := containerGracePeriodSeconds(pod, c, tc.reason); got != tc.want {
				t.Errorf("containerGracePeriodSeconds() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEphemeralContainerJoinsItsTargetsProcesses(t *testing.T) {
	e, _ := newHookTestEnv(t, nil)
	pod := syncTestPod()
	_, running := startPod(t, e, pod)
	appID := running.LatestContainer("app").ID.ID

	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent},
		TargetContainerName:      "app",
	}}
	actions := ComputePodActions(pod, running, nil, e.clock.Now())
	if diff := cmp.Diff([]ContainerToStart{{Index: 0}}, actions.EphemeralContainersToStart); diff != "" {
		t.Fatalf("ephemeral containers to start mismatch (-want +got):\n%s", diff)
	}
	result := e.m.SyncPod(context.Background(), pod, running, actions, &PodEnv{})
	if result.Err != nil {
		t.Fatalf("SyncPod() error = %v", result.Err)
	}
	after, err := e.m.GetPodStatus(context.Background(), pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	debugger := after.LatestContainer("debugger")
	if debugger == nil || debugger.State != kubecontainer.ContainerRunning {
		t.Fatalf("debugger = %+v, want running", debugger)
	}
	namespaces := e.runtime.configs[debugger.ID.ID].GetLinux().GetSecurityContext().GetNamespaceOptions()
	if namespaces.GetPid() != runtimeapi.NamespaceMode_TARGET || namespaces.GetTargetId() != appID {
		t.Errorf("debugger's PID namespace = %v target %q, want TARGET %q", namespaces.GetPid(), namespaces.GetTargetId(), appID)
	}
	// Once it ran, it is never started again.
	if next := ComputePodActions(pod, after, nil, e.clock.Now()); !next.NoChange() {
		t.Errorf("ComputePodActions() after the debugger started = %+v, want no change", next)
	}
}

func TestWithTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	message := write("message", "bye")
	empty := write("empty", "")
	long := write("long", string(make([]byte, 5000))+"end")
	log := write("log", "2026-11-22T01:19:08.29Z stdout F first\n"+
		"2026-11-22T01:19:08.30Z stderr P part \n"+
		"2026-11-22T01:19:08.31Z stderr F one\n")
	mounts := func(hostPath string) []*runtimeapi.Mount {
		return []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: hostPath}}
	}
	file := containerAnnotations{TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}
	fallback := file
	fallback.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError

	cases := map[string]struct {
		runtimeMessage string
		status         *runtimeapi.ContainerStatus
		info           containerAnnotations
		want           string
	}{
		"the file": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(message)}, info: file, want: "bye",
		},
		"the runtime's message first": {
			runtimeMessage: "OOMKilled", status: &runtimeapi.ContainerStatus{Mounts: mounts(message)}, info: file, want: "OOMKilled: bye",
		},
		"the end of a long file": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(long)}, info: file, want: string(make([]byte, 4093)) + "end",
		},
		"no file": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(filepath.Join(dir, "missing")), ExitCode: 1, LogPath: log}, info: file, want: "",
		},
		"failed without a message: the log's end": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(empty), ExitCode: 1, LogPath: log}, info: fallback, want: "first\npart one\n",
		},
		"succeeded: no fallback": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(empty), LogPath: log}, info: fallback, want: "",
		},
		"succeeded with a message under the fallback policy: the message": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(message), LogPath: log}, info: fallback, want: "bye",
		},
		"failed with a message: the message": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(message), ExitCode: 1, LogPath: log}, info: fallback, want: "bye",
		},
		"could not run: no fallback": {
			status: &runtimeapi.ContainerStatus{Mounts: mounts(empty), ExitCode: 128, Reason: "ContainerCannotRun", LogPath: log}, info: fallback, want: "",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := withTerminationMessage(tc.runtimeMessage, tc.status, tc.info); got != tc.want {
				t.Errorf("withTerminationMessage() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadLogTailKeepsTheLast80LinesAnd2048Bytes(t *testing.T) {
	dir := t.TempDir()
	var content []byte
	for i := range 100 {
		content = append(content, []byte("2026-11-22T01:19:08.29Z stdout F line "+strconv.Itoa(i)+"\n")...)
	}
	path := filepath.Join(dir, "0.log")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	got := readLogTail(path)
	var want string
	for i := 20; i < 100; i++ {
		want += "line " + strconv.Itoa(i) + "\n"
	}
	if got != want {
		t.Errorf("readLogTail() = %q, want lines 20 to 99", got)
	}

	long := filepath.Join(dir, "1.log")
	if err := os.WriteFile(long, []byte("2026-11-22T01:19:08.29Z stdout F "+string(make([]byte, 3000))+"end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readLogTail(long); len(got) != 2048 || got[len(got)-4:] != "end\n" {
		t.Errorf("readLogTail() of a long line: %d bytes ending %q, want its last 2048 bytes", len(got), got[max(0, len(got)-4):])
	}
}
