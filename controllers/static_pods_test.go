package controllers

// The static pod lifecycle against envtest (a real kube-apiserver and
// etcd, no NodeRestriction) and the stateful CRI fake: mirror pod made,
// deleted by a user and made again, a new manifest's pod replacing the
// old one, a removed manifest's pod and mirror gone.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/pod/podutil"
	"github.com/nodelet/nodelet/internal/pod/staticpod"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

// fakeStaticPods is a static pod source whose pods the test sets.
type fakeStaticPods struct {
	mu   sync.Mutex
	pods map[types.NamespacedName]*corev1.Pod
}

func (f *fakeStaticPods) set(pods ...*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pods = map[types.NamespacedName]*corev1.Pod{}
	for _, pod := range pods {
		f.pods[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pod
	}
}

func (f *fakeStaticPods) Get(key types.NamespacedName) (*corev1.Pod, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pod, ok := f.pods[key]
	if !ok {
		return nil, false
	}
	return pod.DeepCopy(), true
}

func (f *fakeStaticPods) List() []*corev1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var pods []*corev1.Pod
	for _, pod := range f.pods {
		pods = append(pods, pod.DeepCopy())
	}
	return pods
}

func (f *fakeStaticPods) Ready() bool { return true }

func staticTestPod(t *testing.T, image string) *corev1.Pod {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: static}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: %q, imagePullPolicy: IfNotPresent}]
`, image)
	pods, err := staticpod.Decode([]byte(manifest), staticpod.Source{Kind: podutil.FileSource, Name: "/manifests/web.yaml"}, testNodeName, false)
	if err != nil {
		t.Fatal(err)
	}
	return pods[0]
}

func TestStaticPodMirrorLifecycle(t *testing.T) {
	statics := &fakeStaticPods{}
	var r *PodReconciler
	env := startReconcilerWith(t, func(pr *PodReconciler) {
		pr.StaticPods = statics
		r = pr
	})
	ctx := context.Background()
	env.createNamespace(t, "static")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNodeName}}
	if err := env.client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "static", Name: "web-" + testNodeName}
	first := staticTestPod(t, "busybox:1")
	statics.set(first)
	r.EnqueuePod(ctx, key.Namespace, key.Name, first.UID)

	mirrorOf := func(static *corev1.Pod) func(*corev1.Pod) error {
		return func(mirror *corev1.Pod) error {
			switch {
			case mirror.Annotations[podutil.MirrorPodAnnotation] != string(static.UID):
				return fmt.Errorf("mirror annotation %q, want %s", mirror.Annotations[podutil.MirrorPodAnnotation], static.UID)
			case mirror.DeletionTimestamp != nil:
				return fmt.Errorf("being deleted")
			case len(mirror.OwnerReferences) != 1 || mirror.OwnerReferences[0].Kind != "Node" || mirror.OwnerReferences[0].UID != node.UID:
				return fmt.Errorf("owners %v, want the Node", mirror.OwnerReferences)
			case mirror.Annotations[podutil.ConfigSourceAnnotation] != "file":
				return fmt.Errorf("annotations %v", mirror.Annotations)
			}
			return running(mirror)
		}
	}
	mirror := env.waitForPod(t, key, "the mirror pod, Running", mirrorOf(first))
	if len(env.runtimeContainers(t, first.UID)) != 1 {
		t.Fatalf("runtime containers of the static pod: %d, want 1", len(env.runtimeContainers(t, first.UID)))
	}

	// A user deletes the mirror pod: it comes back, the pod keeps running.
	if err := env.client.Delete(ctx, mirror); err != nil {
		t.Fatal(err)
	}
	env.waitForPod(t, key, "a new mirror pod", func(p *corev1.Pod) error {
		if p.UID == mirror.UID {
			return fmt.Errorf("still the deleted one")
		}
		return mirrorOf(first)(p)
	})
	if containers := env.runtimeContainers(t, first.UID); len(containers) != 1 || containers[0].Metadata.Attempt != 0 {
		t.Errorf("the static pod's containers after its mirror's deletion: %v, want the first one alone", containers)
	}

	// An edited manifest: a new pod under the same name replaces the old.
	second := staticTestPod(t, "busybox:2")
	statics.set(second)
	r.EnqueuePod(ctx, key.Namespace, key.Name, second.UID)
	env.waitForPod(t, key, "the edited manifest's mirror pod", mirrorOf(second))
	await.Eventually(t, 30*time.Second, "the first pod's runtime pod gone", func(context.Context) error {
		if n := len(env.runtimeSandboxes(t, first.UID)); n > 0 {
			return fmt.Errorf("%d sandboxes left", n)
		}
		return nil
	})

	// A removed manifest: its pod stops and its mirror pod goes.
	statics.set()
	r.EnqueuePod(ctx, key.Namespace, key.Name, "")
	env.waitForPodGone(t, key)
	await.Eventually(t, 30*time.Second, "the second pod's runtime pod gone", func(context.Context) error {
		if n := len(env.runtimeSandboxes(t, second.UID)); n > 0 {
			return fmt.Errorf("%d sandboxes left", n)
		}
		return nil
	})
}
