package vm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// podStartTimeout is how long a pod may take to run in a guest: the first
// pulls its images through the host's registry, and everything is slower
// under TCG.
const podStartTimeout = 3 * time.Minute

// newNamespace makes a namespace for the test, deleted when it ends, and
// waits for its default ServiceAccount, without which no pod is admitted.
func newNamespace(t *testing.T) string {
	t.Helper()
	// A suffix of its own: a test run again (hack/test.sh's retry, or by
	// hand) must not wait for its last run's namespace to go.
	// A namespace's name is a DNS label: what else a test's name holds
	// becomes a dash.
	name := "vm-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	name = strings.TrimRight(name[:min(len(name), 50)], "-") + "-" + rand.String(5)
	c := cluster.client.CoreV1()
	if _, err := c.Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	await.Eventually(t, time.Minute, "namespace "+name+"'s default ServiceAccount", func(ctx context.Context) error {
		_, err := c.ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	return name
}

// busyboxPod is a pod of one busybox container on node, running command.
func busyboxPod(ns, name, node string, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: ptr.To[int64](2),
			Containers: []corev1.Container{{
				Name:            "app",
				Image:           cluster.get("BUSYBOX_IMAGE"),
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         command,
			}},
		},
	}
}

func createPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := cluster.client.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return created
}

// waitForPod polls the pod until cond holds, and returns it then.
func waitForPod(t *testing.T, pod *corev1.Pod, timeout time.Duration, what string, cond func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	await.Eventually(t, timeout, fmt.Sprintf("pod %s/%s %s", pod.Namespace, pod.Name, what), func(ctx context.Context) error {
		got, err := cluster.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		last = got
		ok, err := cond(got)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("not yet: %s", describe(got))
		}
		return nil
	})
	return last
}

func runningAndReady(pod *corev1.Pod) (bool, error) {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("the pod ended in phase %s: %s", pod.Status.Phase, describe(pod))
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return pod.Status.Phase == corev1.PodRunning && c.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}

// describe is the pod's phase and its containers' states, for messages.
func describe(pod *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", pod.Status.Phase)
	if pod.Status.Reason != "" {
		fmt.Fprintf(&b, " (%s: %s)", pod.Status.Reason, pod.Status.Message)
	}
	for _, c := range pod.Status.ContainerStatuses {
		fmt.Fprintf(&b, "; %s restarts=%d", c.Name, c.RestartCount)
		switch s := c.State; {
		case s.Waiting != nil:
			fmt.Fprintf(&b, " waiting %s %s", s.Waiting.Reason, s.Waiting.Message)
		case s.Running != nil:
			b.WriteString(" running")
		case s.Terminated != nil:
			fmt.Fprintf(&b, " terminated %s exit %d", s.Terminated.Reason, s.Terminated.ExitCode)
		}
	}
	return b.String()
}

// containerID is the runtime's ID of the pod's container, without its
// runtime:// prefix.
func containerID(t *testing.T, pod *corev1.Pod, name string) string {
	t.Helper()
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == name {
			_, id, _ := strings.Cut(c.ContainerID, "://")
			if id == "" {
				t.Fatalf("container %s of pod %s/%s has no ID: %s", name, pod.Namespace, pod.Name, describe(pod))
			}
			return id
		}
	}
	t.Fatalf("pod %s/%s has no container %s: %s", pod.Namespace, pod.Name, name, describe(pod))
	return ""
}

// nodeReady is an await check: the Node's Ready condition is True.
func nodeReady(node string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		n, err := cluster.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not Ready")
	}
}

// waitForNodeReady waits until the Node's Ready condition is True.
func waitForNodeReady(t *testing.T, node string, timeout time.Duration) {
	t.Helper()
	await.Eventually(t, timeout, "node "+node+" to be Ready", nodeReady(node))
}
