package main

// Tests of the hook's host cleaning: the pure parts, and the pods it runs
// against a real API server (envtest, package internal/testenv), where
// no kubelet runs them: the test writes their ends into their status.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

func TestHostsOf(t *testing.T) {
	got := hostsOf([]string{"b", "", "a", "b"}, []string{"a-nodelet", "c-nodelet", "d", "-nodelet"}, "-nodelet")
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("hostsOf() mismatch (-want +got):\n%s", diff)
	}
	if got := hostsOf(nil, []string{"a-nodelet"}, ""); len(got) != 0 {
		t.Errorf("hostsOf() without a suffix = %v, want no host from the Nodes' names", got)
	}
}

func TestParseCleanPod(t *testing.T) {
	const ok = `{"metadata":{"generateName":"r-clean-host-"},"spec":{"containers":[{"name":"clean","image":"nodelet"}]}}`
	pod, err := parseCleanPod(ok)
	if err != nil || pod.GenerateName != "r-clean-host-" || pod.Spec.Containers[0].Image != "nodelet" {
		t.Errorf("parseCleanPod(%s) = %+v, %v", ok, pod, err)
	}
	for name, s := range map[string]string{
		"no generateName":  `{"spec":{"containers":[{"name":"clean","image":"nodelet"}]}}`,
		"a node already":   `{"metadata":{"generateName":"x-"},"spec":{"nodeName":"a","containers":[{"name":"clean","image":"nodelet"}]}}`,
		"no containers":    `{"metadata":{"generateName":"x-"},"spec":{}}`,
		"an unknown field": `{"metadata":{"generateName":"x-"},"spec":{"containers":[{"name":"clean","image":"nodelet"}],"nodeNmae":"a"}}`,
	} {
		if _, err := parseCleanPod(s); err == nil {
			t.Errorf("%s: parseCleanPod() = nil error, want one", name)
		}
	}
}

// TestCleanHosts: a pod bound to each host; one that succeeds is fine,
// one that fails is an error with its termination message, and all are
// deleted at the end.
func TestCleanHosts(t *testing.T) {
	client, err := kubernetes.NewForConfig(testenv.StartAPIServer(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	template := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "r-clean-host-", Labels: map[string]string{"app.kubernetes.io/component": "clean-host"}},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "clean", Image: "nodelet"}}},
	}
	// The hosts' kubelets: host-b's pod fails.
	done := make(chan struct{})
	go func() {
		defer close(done)
		end := map[string]corev1.PodStatus{
			"host-a": {Phase: corev1.PodSucceeded},
			"host-b": {Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "clean", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "/var/lib/nodelet: is a symlink, which is not followed"},
			}}}},
		}
		for len(end) > 0 && ctx.Err() == nil {
			pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=clean-host"})
			if err != nil {
				continue
			}
			for i := range pods.Items {
				pod := &pods.Items[i]
				status, ok := end[pod.Spec.NodeName]
				if !ok {
					continue
				}
				pod.Status = status
				if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err == nil {
					delete(end, pod.Spec.NodeName)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()

	err = cleanHosts(ctx, client, template, "default", []string{"host-a", "host-b"}, 100*time.Millisecond, 30*time.Second, testr.New(t))
	<-done
	if err == nil || !strings.Contains(err.Error(), "cleaning host host-b") || !strings.Contains(err.Error(), "is a symlink, which is not followed") || strings.Contains(err.Error(), "host-a") {
		t.Errorf("cleanHosts() = %v, want host-b's failure with its message, and nothing of host-a", err)
	}
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=clean-host"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods left after cleanHosts(), want them deleted (terminal pods go at once)", len(pods.Items))
	}
}

// TestCleanHostsNotDoneInTime: a host whose pod never ends is an error
// once the timeout has passed, and its pod is deleted.
func TestCleanHostsNotDoneInTime(t *testing.T) {
	client, err := kubernetes.NewForConfig(testenv.StartAPIServer(t))
	if err != nil {
		t.Fatal(err)
	}
	template := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "r-clean-host-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "clean", Image: "nodelet"}}},
	}
	err = cleanHosts(t.Context(), client, template, "default", []string{"down"}, 100*time.Millisecond, time.Second, testr.New(t))
	if err == nil || !strings.Contains(err.Error(), "cleaning host down") || !strings.Contains(err.Error(), "not done in 1s") {
		t.Errorf("cleanHosts() = %v, want host down not done in time", err)
	}
	pods, err := client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s on %s is not being deleted", p.Name, p.Spec.NodeName)
		}
	}
}
