package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

const staticPodTimeout = 2 * time.Minute

// staticManifest is a static pod of busybox printing word and sleeping.
func staticManifest(ns, name, word string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo %s; sleep 3600"]
`, name, ns, busyboxImage, word)
}

// waitForMirror polls the mirror pod named key until cond holds.
func waitForMirror(t *testing.T, key types.NamespacedName, what string, cond func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	var mirror *corev1.Pod
	err := await.Poll(t.Context(), staticPodTimeout, func(ctx context.Context) error {
		pod, err := f.Client.CoreV1().Pods(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mirror = pod
		return cond(pod)
	})
	if err != nil {
		t.Fatalf("waiting for mirror pod %s %s: %v", key, what, err)
	}
	return mirror
}

// aRunningMirror: the mirror pod of the static pod of hash (any when
// empty), with the kubelet's annotations, owned by the Node, showing its
// static pod Running and Ready.
func aRunningMirror(hash string) func(*corev1.Pod) error {
	return func(pod *corev1.Pod) error {
		mirrorHash := pod.Annotations["kubernetes.io/config.mirror"]
		switch {
		case mirrorHash == "" || (hash != "" && mirrorHash != hash):
			return fmt.Errorf("config.mirror %q, want %q", mirrorHash, hash)
		case pod.Annotations["kubernetes.io/config.hash"] != mirrorHash || pod.Annotations["kubernetes.io/config.seen"] == "":
			return fmt.Errorf("annotations %v", pod.Annotations)
		case pod.DeletionTimestamp != nil:
			return fmt.Errorf("being deleted")
		case len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].Kind != "Node" || pod.OwnerReferences[0].Name != f.Env.NodeName:
			return fmt.Errorf("owners %v, want Node %s", pod.OwnerReferences, f.Env.NodeName)
		}
		if ok, err := runningAndReady(pod); err != nil {
			return fmt.Errorf("phase %s: %w", pod.Status.Phase, err)
		} else if !ok {
			return fmt.Errorf("phase %s, not Running and Ready", pod.Status.Phase)
		}
		return nil
	}
}

func waitForMirrorGone(t *testing.T, key types.NamespacedName) {
	t.Helper()
	err := await.Poll(t.Context(), staticPodTimeout, func(ctx context.Context) error {
		_, err := f.Client.CoreV1().Pods(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("still there")
	})
	if err != nil {
		t.Fatalf("waiting for mirror pod %s to be gone: %v", key, err)
	}
}

// TestStaticPodFromFolder: a manifest in the node's folder runs; its
// mirror pod shows it; a deleted mirror pod comes back without the pod
// restarting; an edited manifest is a new pod (new UID, new container);
// a removed manifest stops it and removes its mirror pod.
func TestStaticPodFromFolder(t *testing.T) {
	if f.Env.StaticPodDir == "" {
		t.Fatal("the stack's env names no STATIC_POD_DIR: bring the stack up with this tree's hack/local-up.sh")
	}
	t.Parallel()
	ns := f.NewNamespace(t)
	manifest := filepath.Join(f.Env.StaticPodDir, ns+".yaml")
	write := func(word string) {
		// Written beside and renamed, as an editor or kubeadm would: the
		// node never reads half a file.
		tmp := filepath.Join(f.Env.StaticPodDir, "."+ns+".yaml.tmp")
		if err := os.WriteFile(tmp, []byte(staticManifest(ns, "web", word)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, manifest); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = os.Remove(manifest) })
	write("first")
	key := types.NamespacedName{Namespace: ns, Name: "web-" + f.Env.NodeName}
	mirror := waitForMirror(t, key, "Running", aRunningMirror(""))
	first := mirror.Annotations["kubernetes.io/config.hash"]
	firstContainer := mirror.Status.ContainerStatuses[0].ContainerID

	if err := f.Client.CoreV1().Pods(ns).Delete(t.Context(), key.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again := waitForMirror(t, key, "created again", func(pod *corev1.Pod) error {
		if pod.UID == mirror.UID {
			return fmt.Errorf("still the deleted one")
		}
		return aRunningMirror(first)(pod)
	})
	if got := again.Status.ContainerStatuses[0]; got.ContainerID != firstContainer || got.RestartCount != 0 {
		t.Errorf("container after the mirror's deletion %s (restarts %d), want %s unrestarted", got.ContainerID, got.RestartCount, firstContainer)
	}

	write("second")
	edited := waitForMirror(t, key, "of the edited manifest", func(pod *corev1.Pod) error {
		if pod.Annotations["kubernetes.io/config.mirror"] == first {
			return fmt.Errorf("still the first manifest's")
		}
		return aRunningMirror("")(pod)
	})
	if edited.Status.ContainerStatuses[0].ContainerID == firstContainer {
		t.Errorf("the edited manifest's pod runs the first container %s", firstContainer)
	}
	editedContainer := edited.Status.ContainerStatuses[0].ContainerID

	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	waitForMirrorGone(t, key)
	f.waitForContainerGone(t, editedContainer)
}

// TestStaticPodFromURL: the pods the node's manifest URL serves run with
// their mirror pods; a PodList without one stops it.
func TestStaticPodFromURL(t *testing.T) {
	if f.Env.StaticPodURL == "" {
		t.Fatal("the stack's env names no STATIC_POD_URL: bring the stack up with this tree's hack/local-up.sh")
	}
	ns := f.NewNamespace(t)
	u, err := url.Parse(f.Env.StaticPodURL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"PodList","items":[%s]}`, manifestJSON(t, staticManifest(ns, "remote", "url")))
	listener, err := net.Listen("tcp", u.Host)
	if err != nil {
		t.Fatalf("serving the node's static pod URL: %v", err)
	}
	server := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if req.URL.Path != u.Path {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write([]byte(body))
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })

	key := types.NamespacedName{Namespace: ns, Name: "remote-" + f.Env.NodeName}
	mirror := waitForMirror(t, key, "Running", aRunningMirror(""))
	if src := mirror.Annotations["kubernetes.io/config.source"]; src != "http" {
		t.Errorf("config.source %q, want http", src)
	}
	container := mirror.Status.ContainerStatuses[0].ContainerID

	mu.Lock()
	body = `{"apiVersion":"v1","kind":"PodList","items":[]}`
	mu.Unlock()
	waitForMirrorGone(t, key)
	f.waitForContainerGone(t, container)
}

func manifestJSON(t *testing.T, manifest string) string {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// waitForContainerGone waits until the runtime no longer runs the
// container of that ID (as a status shows it, runtime://id).
func (f *Framework) waitForContainerGone(t *testing.T, containerID string) {
	t.Helper()
	_, id, _ := strings.Cut(containerID, "://")
	err := await.Poll(t.Context(), staticPodTimeout, func(ctx context.Context) error {
		containers, err := f.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
		if err != nil {
			return err
		}
		for _, c := range containers {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				return fmt.Errorf("container %s still running", id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waiting for container %s to stop: %v", id, err)
	}
}
