package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// podWatcher watches one pod by name, for client-go's RetryWatcher.
type podWatcher struct {
	client    kubernetes.Interface
	namespace string
	name      string
}

func (w podWatcher) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	options.FieldSelector = fields.OneTermEqualSelector("metadata.name", w.name).String()
	return w.client.CoreV1().Pods(w.namespace).Watch(ctx, options)
}

// waitForPod follows every state of a pod, starting with from itself and
// then each change after from's resourceVersion, until cond holds; it
// fails the test after timeout, naming the states the pod went through.
// Passing the pod that Create returned sees every state the pod ever had,
// in order.
func (f *Framework) waitForPod(t *testing.T, from *corev1.Pod, timeout time.Duration, what string, cond func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	pod, err := f.watchPod(t.Context(), from, timeout, cond)
	if err != nil {
		t.Fatalf("waiting %s for pod %s/%s %s: %v", timeout, from.Namespace, from.Name, what, err)
	}
	return pod
}

// watchPod is waitForPod returning its error and the last state seen.
func (f *Framework) watchPod(ctx context.Context, from *corev1.Pod, timeout time.Duration, cond func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	last := from
	var history []string
	check := func(pod *corev1.Pod) (bool, error) {
		last = pod
		if summary := describePod(pod); len(history) == 0 || history[len(history)-1] != summary {
			history = append(history, time.Now().Format("15:04:05.000")+" "+summary)
		}
		return cond(pod)
	}
	withHistory := func(err error) error {
		if len(history) > 15 {
			history = append([]string{"..."}, history[len(history)-15:]...)
		}
		return fmt.Errorf("%w; states seen:\n\t%s", err, strings.Join(history, "\n\t"))
	}

	if done, err := check(from); err != nil || done {
		if err != nil {
			err = withHistory(err)
		}
		return from, err
	}
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, from.ResourceVersion,
		podWatcher{client: f.Client, namespace: from.Namespace, name: from.Name})
	if err != nil {
		return last, err
	}
	_, err = watchtools.UntilWithoutRetry(ctx, watcher, func(event watch.Event) (bool, error) {
		switch event.Type {
		case watch.Error:
			return false, apierrors.FromObject(event.Object)
		case watch.Deleted:
			return false, errors.New("the pod was deleted")
		}
		pod, ok := event.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		if pod.UID != from.UID {
			return false, fmt.Errorf("the pod was replaced by one with uid %s", pod.UID)
		}
		return check(pod)
	})
	if wait.Interrupted(err) {
		err = errors.New("timed out")
	}
	if err != nil {
		err = withHistory(err)
	}
	return last, err
}

// waitForPodGone waits until the pod (this very UID) has left the API
// server and returns when that was seen.
func (f *Framework) waitForPodGone(t *testing.T, pod *corev1.Pod, timeout time.Duration) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()

	current, err := f.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && current.UID != pod.UID) {
		return time.Now()
	}
	if err != nil {
		t.Fatalf("getting pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, current.ResourceVersion,
		podWatcher{client: f.Client, namespace: pod.Namespace, name: pod.Name})
	if err != nil {
		t.Fatalf("watching pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	last := current
	_, err = watchtools.UntilWithoutRetry(ctx, watcher, func(event watch.Event) (bool, error) {
		if event.Type == watch.Error {
			return false, apierrors.FromObject(event.Object)
		}
		seen, ok := event.Object.(*corev1.Pod)
		if !ok || seen.UID != pod.UID {
			return false, nil
		}
		last = seen
		return event.Type == watch.Deleted, nil
	})
	if err != nil {
		t.Fatalf("waiting %s for pod %s/%s to leave the API server: %v; last seen: %s", timeout, pod.Namespace, pod.Name, err, describePod(last))
	}
	return time.Now()
}

// waitForNodeReady waits until the Node is Ready and no longer carries the
// not-ready taint, as a user does before scheduling onto it.
func (f *Framework) waitForNodeReady(ctx context.Context, timeout time.Duration) (*corev1.Node, error) {
	var node *corev1.Node
	err := await.Poll(ctx, timeout, func(ctx context.Context) error {
		var err error
		if node, err = f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{}); err != nil {
			return err
		}
		if !nodeReady(node) || hasTaint(node, corev1.TaintNodeNotReady) {
			return await.ErrNotYet
		}
		return nil
	})
	if err != nil {
		if exitErr := f.Nodelet.UnexpectedExit(); exitErr != nil {
			return node, fmt.Errorf("nodelet exited: %w", exitErr)
		}
		return node, fmt.Errorf("node %s not Ready without the not-ready taint within %s: %w (node conditions: %v, taints: %v)",
			f.Env.NodeName, timeout, err, nodeConditions(node), nodeTaints(node))
	}
	return node, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, taint := range node.Spec.Taints {
		if taint.Key == key {
			return true
		}
	}
	return false
}

func nodeConditions(node *corev1.Node) []string {
	if node == nil {
		return nil
	}
	var out []string
	for _, c := range node.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
	}
	return out
}

func nodeTaints(node *corev1.Node) []string {
	if node == nil {
		return nil
	}
	var out []string
	for _, taint := range node.Spec.Taints {
		out = append(out, taint.ToString())
	}
	return out
}

// httpOK tells whether a GET of url answers 200.
func httpOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
