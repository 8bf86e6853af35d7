package runtime

// SyncPod and GetPodStatus against the stateful CRI fakes of
// k8s.io/cri-api/pkg/apis/testing, with log folders in t.TempDir(). The
// runtime fake is wrapped to keep the container configs it was given and
// to write each container's log file, as containerd does.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sync/semaphore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

type recordingRuntime struct {
	*critest.FakeRuntimeService
	mu      sync.Mutex
	configs map[string]*runtimeapi.ContainerConfig
	// handlers are the runtime handlers Status lists (the fake lists
	// none).
	handlers []*runtimeapi.RuntimeHandler
}

func (r *recordingRuntime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	resp, err := r.FakeRuntimeService.Status(ctx, verbose)
	if err != nil {
		return nil, err
	}
	resp.RuntimeHandlers = r.handlers
	return resp, nil
}

func (r *recordingRuntime) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.FakeRuntimeService.CreateContainer(ctx, sandboxID, config, sandboxConfig)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(sandboxConfig.LogDirectory, config.LogPath), nil, 0o640); err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configs[id] = config
	return id, nil
}

type syncTestEnv struct {
	m        *Manager
	runtime  *recordingRuntime
	images   *critest.FakeImageService
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
	logDir   string
	linkDir  string
}

func newSyncTestEnv(t *testing.T) *syncTestEnv {
	dir := t.TempDir()
	resolvConfPath := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolvConfPath, []byte("nameserver 10.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := &recordingRuntime{FakeRuntimeService: critest.NewFakeRuntimeService(), configs: map[string]*runtimeapi.ContainerConfig{}}
	images := critest.NewFakeImageService()
	images.SetFakeImages([]string{"busybox:1"})
	recorder := record.NewFakeRecorder(100)
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	config := Config{
		PodLogDir:       filepath.Join(dir, "pods"),
		ContainerLogDir: filepath.Join(dir, "containers"),
		ResolvConf:      resolvConfPath,
		ClusterDNS:      ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"},
	}
	m := &Manager{
		runtime:     rt,
		images:      images,
		config:      config,
		recorder:    recorder,
		clock:       clk,
		runtimeName: critest.FakeRuntimeName,
		puller:      newImagePuller(images, recorder, clk),

		sandboxStarts: semaphore.NewWeighted(2),
	}
	return &syncTestEnv{m: m, runtime: rt, images: images, recorder: recorder, clock: clk, logDir: config.PodLogDir, linkDir: config.ContainerLogDir}
}

func syncTestPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			DNSPolicy:     corev1.DNSClusterFirst,
			Containers: []corev1.Container{{
				Name:                     "app",
				Image:                    "busybox:1",
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
		},
	}
}

func TestSyncPodCreatesSandboxAndContainer(t *testing.T) {
	e := newSyncTestEnv(t)
	ctx := context.Background()
	pod := syncTestPod()
	env := &PodEnv{CgroupParent: "/kubepods/poduid-1", PodDir: t.TempDir()}

	before, err := e.m.GetPodStatus(ctx, pod.UID)
	if err != nil {
		t.Fatalf("GetPodStatus() before error = %v", err)
	}
	actions := ComputePodActions(pod, before, nil, e.clock.Now())
	if !actions.CreateSandbox || len(actions.ContainersToStart) != 1 {
		t.Fatalf("ComputePodActions() = %+v, want a new sandbox and one container", actions)
	}

	result := e.m.SyncPod(ctx, pod, before, actions, env)
	if result.Err != nil || result.SandboxError != nil || len(result.ContainerErrors) != 0 {
		t.Fatalf("SyncPod() = %+v, want no errors", result)
	}
	if diff := cmp.Diff([]string{"app"}, result.Started); diff != "" {
		t.Errorf("started mismatch (-want +got):\n%s", diff)
	}

	// The runtime holds one ready sandbox and one running container, each
	// labelled with the pod's identity.
	sandboxes, err := e.runtime.ListPodSandbox(ctx, nil)
	if err != nil || len(sandboxes) != 1 {
		t.Fatalf("ListPodSandbox() = %v, %v, want one sandbox", sandboxes, err)
	}
	sandbox := sandboxes[0]
	if sandbox.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox state = %v, want ready", sandbox.State)
	}
	wantSandboxLabels := map[string]string{"app": "web", kubecontainer.LabelPodName: "web", kubecontainer.LabelPodNamespace: "default", kubecontainer.LabelPodUID: "uid-1"}
	if diff := cmp.Diff(wantSandboxLabels, sandbox.Labels); diff != "" {
		t.Errorf("sandbox labels mismatch (-want +got):\n%s", diff)
	}
	containers, err := e.runtime.ListContainers(ctx, nil)
	if err != nil || len(containers) != 1 {
		t.Fatalf("ListContainers() = %v, %v, want one container", containers, err)
	}
	c := containers[0]
	if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || c.PodSandboxId != sandbox.Id {
		t.Errorf("container state = %v in sandbox %s, want running in %s", c.State, c.PodSandboxId, sandbox.Id)
	}
	wantContainerLabels := map[string]string{kubecontainer.LabelPodName: "web", kubecontainer.LabelPodNamespace: "default", kubecontainer.LabelPodUID: "uid-1", kubecontainer.LabelContainerName: "app"}
	if diff := cmp.Diff(wantContainerLabels, c.Labels); diff != "" {
		t.Errorf("container labels mismatch (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{
		AnnotationContainerHash:            HashContainer(&pod.Spec.Containers[0]),
		AnnotationRestartCount:             "0",
		AnnotationTerminationMessagePath:   "/dev/termination-log",
		AnnotationTerminationMessagePolicy: "File",
		AnnotationPodTerminationGrace:      "30",
		AnnotationResources:                "{}",
	}
	if diff := cmp.Diff(wantAnnotations, c.Annotations); diff != "" {
		t.Errorf("container annotations mismatch (-want +got):\n%s", diff)
	}

	// The log file lands in the pod's log folder and is linked for
	// shippers.
	logDir := filepath.Join(e.logDir, "default_web_uid-1")
	if got := e.runtime.configs[c.Id].GetLogPath(); got != "app/0.log" {
		t.Errorf("container log path = %q, want app/0.log", got)
	}
	link := filepath.Join(e.linkDir, "web_default_app-"+c.Id+".log")
	if target, err := os.Readlink(link); err != nil || target != filepath.Join(logDir, "app", "0.log") {
		t.Errorf("log link = %q, %v, want it to point at the log file", target, err)
	}

	// The container's /etc/hosts names the pod at the IP the new sandbox
	// got, in a file of the pod's folder.
	hostsPath := filepath.Join(env.PodDir, "etc-hosts")
	var hostsMounted bool
	for _, mount := range e.runtime.configs[c.Id].GetMounts() {
		if mount.ContainerPath == "/etc/hosts" {
			hostsMounted = mount.HostPath == hostsPath
		}
	}
	if !hostsMounted {
		t.Errorf("container mounts = %v, want %s at /etc/hosts", e.runtime.configs[c.Id].GetMounts(), hostsPath)
	}
	if hosts, err := os.ReadFile(hostsPath); err != nil || !strings.Contains(string(hosts), critest.FakePodSandboxIPs[0]+"\tweb\n") {
		t.Errorf("hosts file = %q, %v, want the sandbox's IP with the pod's hostname", hosts, err)
	}

	// Reading the runtime back gives what was created.
	after, err := e.m.GetPodStatus(ctx, pod.UID)
	if err != nil {
		t.Fatalf("GetPodStatus() error = %v", err)
	}
	want := &kubecontainer.PodStatus{
		UID: "uid-1", Name: "web", Namespace: "default",
		Sandboxes: []*kubecontainer.SandboxStatus{{ID: sandbox.Id, State: kubecontainer.SandboxReady, IPs: critest.FakePodSandboxIPs}},
		Containers: []*kubecontainer.ContainerStatus{{
			ID:        kubecontainer.ContainerID{Type: critest.FakeRuntimeName, ID: c.Id},
			Name:      "app",
			SandboxID: sandbox.Id,
			State:     kubecontainer.ContainerRunning,
			Image:     "busybox:1",
			ImageRef:  "busybox:1",
			Hash:      HashContainer(&pod.Spec.Containers[0]),

			TerminationGracePeriod: 30 * time.Second,
			Actuated:               &kubecontainer.ResizeValues{},
		}},
	}
	ignoreTimes := cmpopts.IgnoreFields(kubecontainer.ContainerStatus{}, "CreatedAt", "StartedAt")
	if diff := cmp.Diff(want, after, ignoreTimes, cmpopts.IgnoreFields(kubecontainer.SandboxStatus{}, "CreatedAt")); diff != "" {
		t.Errorf("GetPodStatus() mismatch (-want +got):\n%s", diff)
	}

	// With everything running, there is nothing left to do.
	if next := ComputePodActions(pod, after, nil, e.clock.Now()); !next.NoChange() {
		t.Errorf("ComputePodActions() after the sync = %+v, want no change", next)
	}

	wantEvents := []string{
		`Normal Pulled Container image "busybox:1" already present on machine`,
		"Normal Created Container created",
		"Normal Started Container started",
	}
	if diff := cmp.Diff(wantEvents, drainEvents(e.recorder)); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestSyncPodReportsContainerConfigErrors(t *testing.T) {
	e := newSyncTestEnv(t)
	ctx := context.Background()
	pod := syncTestPod()
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "missing", Image: "nginx:1", ImagePullPolicy: corev1.PullNever})

	status := &kubecontainer.PodStatus{UID: pod.UID}
	result := e.m.SyncPod(ctx, pod, status, ComputePodActions(pod, status, nil, e.clock.Now()), &PodEnv{})

	want := map[string]*kubecontainer.ContainerError{
		"app":     {Reason: kubecontainer.ReasonCreateContainerConfigError, Message: `cannot find volume "data" to mount into container "app"`},
		"missing": {Reason: kubecontainer.ReasonErrImageNeverPull, Message: `Container image "nginx:1" is not present with pull policy of Never`},
	}
	if diff := cmp.Diff(want, result.ContainerErrors); diff != "" {
		t.Errorf("container errors mismatch (-want +got):\n%s", diff)
	}
	if result.SandboxError != nil {
		t.Errorf("sandbox error = %v, want the sandbox created", result.SandboxError)
	}
	if containers, _ := e.runtime.ListContainers(ctx, nil); len(containers) != 0 {
		t.Errorf("the runtime holds %d containers, want none", len(containers))
	}
}

// gatedRuntime holds every RunPodSandbox until the test opens the gate,
// counting the calls in flight.
type gatedRuntime struct {
	*recordingRuntime
	gate     chan struct{}
	mu       sync.Mutex
	inFlight int
	most     int
	started  chan struct{}
}

func (r *gatedRuntime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.mu.Lock()
	r.inFlight++
	r.most = max(r.most, r.inFlight)
	r.mu.Unlock()
	r.started <- struct{}{}
	<-r.gate
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	return r.recordingRuntime.RunPodSandbox(ctx, config, handler)
}

// A burst of pods asks the runtime for at most ParallelSandboxStarts
// sandboxes at once (two here); the others wait their turn and all get
// theirs.
func TestSyncPodRunsAtMostTheParallelSandboxStartsAtOnce(t *testing.T) {
	e := newSyncTestEnv(t)
	rt := &gatedRuntime{recordingRuntime: e.runtime, gate: make(chan struct{}), started: make(chan struct{}, 10)}
	e.m.runtime = rt
	const pods = 6
	var wg sync.WaitGroup
	errs := make(chan error, pods)
	for i := range pods {
		pod := syncTestPod()
		pod.Name = fmt.Sprintf("pod-%d", i)
		pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
		wg.Go(func() {
			status, err := e.m.GetPodStatus(t.Context(), pod.UID)
			if err != nil {
				errs <- err
				return
			}
			actions := ComputePodActions(pod, status, nil, e.clock.Now())
			result := e.m.SyncPod(t.Context(), pod, status, actions, &PodEnv{PodDir: t.TempDir()})
			if result.Err != nil || result.SandboxError != nil || len(result.ContainerErrors) != 0 {
				errs <- fmt.Errorf("pod %s: SyncPod() = %+v, want no errors", pod.Name, result)
			}
		})
	}
	// Two calls start; the third waits for one of them to end.
	for range 2 {
		<-rt.started
	}
	select {
	case <-rt.started:
		t.Fatalf("a third RunPodSandbox started while two were in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(rt.gate)
	for range pods - 2 {
		<-rt.started
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if rt.most != 2 {
		t.Errorf("at most %d RunPodSandbox calls were in flight at once, want 2", rt.most)
	}
	sandboxes, err := rt.ListPodSandbox(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sandboxes) != pods {
		t.Errorf("%d sandboxes after the burst, want %d", len(sandboxes), pods)
	}
}
