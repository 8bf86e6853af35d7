package controllers

// The pod reconciler end to end, without a real runtime: a real API server
// (envtest), the real runtime.Manager over the stateful CRI fake of
// k8s.io/cri-api/pkg/apis/testing, the PLEG relisting that fake, and
// in-memory volumes and cgroups. The real-runtime version of these cases
// lives in test/e2e.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podenv"
	"github.com/nodelet/nodelet/internal/prober"
	"github.com/nodelet/nodelet/internal/resources/allocation"
	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/testenv"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

const testNodeName = "test-node"

// fakeVolumes hands out an empty folder per volume.
type fakeVolumes struct{ root string }

func (v fakeVolumes) PodDir(uid types.UID) string { return filepath.Join(v.root, string(uid)) }

func (v fakeVolumes) ExtraSupplementalGroups(*corev1.Pod) []int64 { return nil }
func (v fakeVolumes) SELinuxRelabel(*corev1.Pod) map[string]bool  { return nil }

func (v fakeVolumes) SetUpPod(_ context.Context, pod *corev1.Pod) (map[string]string, time.Time, error) {
	paths := map[string]string{}
	for _, vol := range pod.Spec.Volumes {
		paths[vol.Name] = filepath.Join(v.PodDir(pod.UID), "volumes", vol.Name)
		if err := os.MkdirAll(paths[vol.Name], 0o755); err != nil {
			return nil, time.Time{}, err
		}
	}
	return paths, time.Time{}, nil
}

func (v fakeVolumes) TearDownPod(_ context.Context, uid types.UID) error {
	return os.RemoveAll(v.PodDir(uid))
}

type reconcilerEnv struct {
	client  client.Client
	runtime *critest.FakeRuntimeService
	cgroups *fakeCgroups

	mu     sync.Mutex
	events []string
}

// recordedEvents are the events recorded so far, as "Type Reason Message".
func (e *reconcilerEnv) recordedEvents() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

// startReconciler runs the pod reconciler and its PLEG against envtest and
// the CRI fake until the test ends.
func startReconciler(t *testing.T) *reconcilerEnv {
	t.Helper()
	return startReconcilerWith(t, nil)
}

// startReconcilerWith is startReconciler with configure applied to the
// reconciler before it starts.
func startReconcilerWith(t *testing.T, configure func(*PodReconciler)) *reconcilerEnv {
	t.Helper()
	env := &reconcilerEnv{}
	cfg := testenv.StartAPIServer(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", testNodeName)},
		}},
		Metrics: metricsserver.Options{BindAddress: "0"},
		// Each test builds its own manager with the same controller name.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	fakeRuntime := critest.NewFakeRuntimeService()
	resolvConf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver 10.0.0.10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recorder := record.NewFakeRecorder(1000)
	go func() { // The recorder's channel must not fill up.
		for event := range recorder.Events {
			env.mu.Lock()
			env.events = append(env.events, event)
			env.mu.Unlock()
		}
	}()
	allocations, err := allocation.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runtimeManager, err := noderuntime.NewManager(ctx, fakeRuntime, critest.NewFakeImageService(), noderuntime.Config{
		PodLogDir:       t.TempDir(),
		ContainerLogDir: t.TempDir(),
		ResolvConf:      resolvConf,
		Resizes:         allocations,
	}, recorder, clock.RealClock{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	cgroups := &fakeCgroups{pods: map[types.UID]bool{}}
	// Exec probes run through the fake's ExecSync.
	var r *PodReconciler
	probes := prober.NewManager(prober.Options{
		Runner:   noderuntime.ExecRunner(fakeRuntime),
		Recorder: recorder,
		OnChange: func(ctx context.Context, namespace, name string, uid types.UID) {
			r.EnqueuePod(ctx, namespace, name, uid)
		},
	})
	r = NewPodReconciler(&PodReconciler{
		Client:      mgr.GetClient(),
		Runtime:     runtimeManager,
		Volumes:     fakeVolumes{root: t.TempDir()},
		Cgroups:     cgroups,
		Recorder:    recorder,
		Clock:       clock.RealClock{},
		NodeName:    testNodeName,
		Allocations: allocations,
		HostIPs:     func() []string { return []string{"10.1.1.1"} },
		Prober:      probes,
		EnvSources: &podenv.Gatherer{
			APIReader: mgr.GetAPIReader(), Cache: mgr.GetClient(), NodeName: testNodeName, Recorder: recorder,
		},
	})
	if configure != nil {
		configure(r)
	}
	if err := r.SetupWithManager(mgr, 4); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(probes); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(r.NewPLEG(runtimeManager, 100*time.Millisecond, logr.Discard())); err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(t, mgr)
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env.client, env.runtime, env.cgroups = c, fakeRuntime, cgroups
	return env
}

func testPod(namespace, name string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      testNodeName,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{{Name: "app", Image: "busybox:1", ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}
}

func (e *reconcilerEnv) createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := e.client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func (e *reconcilerEnv) waitForPod(t *testing.T, key types.NamespacedName, what string, check func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	await.Eventually(t, 30*time.Second, what, func(context.Context) error {
		if err := e.client.Get(context.Background(), key, pod); err != nil {
			return err
		}
		return check(pod)
	})
	return pod
}

// waitForPodGone waits until the API server no longer has the pod.
func (e *reconcilerEnv) waitForPodGone(t *testing.T, key types.NamespacedName) {
	t.Helper()
	await.Eventually(t, 30*time.Second, "pod gone from the API", func(ctx context.Context) error {
		err := e.client.Get(ctx, key, &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading it: %w", err)
		}
		return errors.New("still there")
	})
}

// runtimeContainers lists the fake's containers of one pod.
func (e *reconcilerEnv) runtimeContainers(t *testing.T, uid types.UID) []*runtimeapi.Container {
	t.Helper()
	containers, err := e.runtime.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{kubecontainer.LabelPodUID: string(uid)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return containers
}

func (e *reconcilerEnv) runtimeSandboxes(t *testing.T, uid types.UID) []*runtimeapi.PodSandbox {
	t.Helper()
	sandboxes, err := e.runtime.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{kubecontainer.LabelPodUID: string(uid)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return sandboxes
}

func running(pod *corev1.Pod) error {
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("phase %q", pod.Status.Phase)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].State.Running == nil {
		return fmt.Errorf("container statuses %+v", pod.Status.ContainerStatuses)
	}
	return nil
}

func TestPodReconciler(t *testing.T) {
	env := startReconciler(t)
	ctx := context.Background()

	t.Run("a pod bound to the node runs and reports Running and Ready", func(t *testing.T) {
		env.createNamespace(t, "runs")
		pod := testPod("runs", "web")
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		got := env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
		cs := got.Status.ContainerStatuses[0]
		if !cs.Ready || cs.ContainerID == "" || got.Status.PodIP != critest.FakePodSandboxIPs[0] || got.Status.HostIP != "10.1.1.1" {
			t.Errorf("status = ready %v, containerID %q, podIP %q, hostIP %q", cs.Ready, cs.ContainerID, got.Status.PodIP, got.Status.HostIP)
		}
		if !env.cgroups.has(got.UID) {
			t.Error("the pod has no cgroup")
		}
	})

	t.Run("a pod bound to another node is left alone", func(t *testing.T) {
		env.createNamespace(t, "other")
		pod := testPod("other", "web")
		pod.Spec.NodeName = "another-node"
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		// A pod on this node created after it is running shows the
		// reconciler has had every chance to act on the other one.
		mine := testPod("other", "mine")
		if err := env.client.Create(ctx, mine); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(mine), "pod running", running)
		if got := env.runtimeSandboxes(t, pod.UID); len(got) != 0 {
			t.Errorf("sandboxes of another node's pod: %d", len(got))
		}
	})

	t.Run("a container is never started twice across relists", func(t *testing.T) {
		env.createNamespace(t, "once")
		pod := testPod("once", "web")
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
		relists := func() int {
			n := 0
			for _, call := range env.runtime.GetCalls() {
				if call == "ListPodSandbox" {
					n++
				}
			}
			return n
		}
		start := relists()
		await.Eventually(t, 30*time.Second, "ten more relists", func(context.Context) error {
			if relists() < start+10 {
				return fmt.Errorf("%d relists", relists()-start)
			}
			return nil
		})
		if got := env.runtimeContainers(t, pod.UID); len(got) != 1 {
			t.Errorf("containers of the pod: %d, want 1", len(got))
		}
	})

	t.Run("a dead container restarts, then backs off", func(t *testing.T) {
		env.createNamespace(t, "crash")
		pod := testPod("crash", "web")
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		got := env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
		kill := func(id string) {
			if err := env.runtime.StopContainer(ctx, id, 0); err != nil {
				t.Fatal(err)
			}
		}
		kill(trimScheme(got.Status.ContainerStatuses[0].ContainerID))
		got = env.waitForPod(t, client.ObjectKeyFromObject(pod), "first restart", func(p *corev1.Pod) error {
			if err := running(p); err != nil {
				return err
			}
			if cs := p.Status.ContainerStatuses[0]; cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil {
				return fmt.Errorf("restartCount %d, lastState %+v", cs.RestartCount, cs.LastTerminationState)
			}
			return nil
		})
		kill(trimScheme(got.Status.ContainerStatuses[0].ContainerID))
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "CrashLoopBackOff", func(p *corev1.Pod) error {
			cs := p.Status.ContainerStatuses[0]
			if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
				return fmt.Errorf("state %+v", cs.State)
			}
			return nil
		})
		// Dead instances are pruned to one.
		exited := 0
		for _, c := range env.runtimeContainers(t, pod.UID) {
			if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				exited++
			}
		}
		if exited != 1 {
			t.Errorf("exited instances: %d, want 1", exited)
		}
	})

	t.Run("a deleted pod is stopped, removed and deleted for good", func(t *testing.T) {
		env.createNamespace(t, "delete")
		pod := testPod("delete", "web")
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
		if err := env.client.Delete(ctx, pod); err != nil {
			t.Fatal(err)
		}
		env.waitForPodGone(t, client.ObjectKeyFromObject(pod))
		if n := len(env.runtimeSandboxes(t, pod.UID)) + len(env.runtimeContainers(t, pod.UID)); n != 0 {
			t.Errorf("runtime objects left: %d", n)
		}
		if env.cgroups.has(pod.UID) {
			t.Error("cgroup left")
		}
	})

	t.Run("a pod recreated under the same name runs fresh and the old one goes", func(t *testing.T) {
		env.createNamespace(t, "recreate")
		old := testPod("recreate", "web")
		if err := env.client.Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(old), "pod running", running)
		// Force deletion: the Pod is gone at once, its runtime pod is not.
		if err := env.client.Delete(ctx, old, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		fresh := testPod("recreate", "web")
		if err := env.client.Create(ctx, fresh); err != nil {
			t.Fatal(err)
		}
		got := env.waitForPod(t, client.ObjectKeyFromObject(fresh), "new pod running", running)
		if got.UID == old.UID || got.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("new pod inherited the old one: uid %s, restartCount %d", got.UID, got.Status.ContainerStatuses[0].RestartCount)
		}
		await.Eventually(t, 30*time.Second, "old runtime pod removed", func(context.Context) error {
			if n := len(env.runtimeSandboxes(t, old.UID)) + len(env.runtimeContainers(t, old.UID)); n != 0 {
				return fmt.Errorf("%d runtime objects left", n)
			}
			return nil
		})
		if n := len(env.runtimeContainers(t, got.UID)); n != 1 {
			t.Errorf("containers of the new pod: %d, want 1", n)
		}
	})

	t.Run("restartPolicy Never: a finished pod is Succeeded and its sandbox stopped", func(t *testing.T) {
		env.createNamespace(t, "never")
		pod := testPod("never", "job")
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		if err := env.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		got := env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod running", running)
		// The fake's StopContainer exits with code 0.
		if err := env.runtime.StopContainer(ctx, trimScheme(got.Status.ContainerStatuses[0].ContainerID), 0); err != nil {
			t.Fatal(err)
		}
		env.waitForPod(t, client.ObjectKeyFromObject(pod), "pod Succeeded", func(p *corev1.Pod) error {
			if p.Status.Phase != corev1.PodSucceeded {
				return fmt.Errorf("phase %q", p.Status.Phase)
			}
			return nil
		})
		await.Eventually(t, 30*time.Second, "sandbox stopped", func(context.Context) error {
			for _, sb := range env.runtimeSandboxes(t, pod.UID) {
				if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					return fmt.Errorf("sandbox %s still ready", sb.Id)
				}
			}
			return nil
		})
		if n := len(env.runtimeContainers(t, pod.UID)); n != 1 {
			t.Errorf("the finished container should stay for its logs; containers: %d", n)
		}
	})
}

func trimScheme(containerID string) string {
	for i := 0; i+3 <= len(containerID); i++ {
		if containerID[i:i+3] == "://" {
			return containerID[i+3:]
		}
	}
	return containerID
}
