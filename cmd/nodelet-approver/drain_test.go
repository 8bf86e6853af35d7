package main

// Tests of `nodelet-approver drain-companions`: which pods a drain takes
// (pure), and the drain against a real API server (envtest, package
// internal/testenv), whose Eviction API checks disruption budgets; no
// kubelet runs there, so a goroutine stands for nodelet, finishing the
// deletion of the pods evicted.

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

func TestPodsToDrain(t *testing.T) {
	pod := func(name string, mutate func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if mutate != nil {
			mutate(&p)
		}
		return p
	}
	controlledBy := func(apiVersion, kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "1", Controller: ptr.To(true)}}
		}
	}
	pods := []corev1.Pod{
		pod("unreplicated", nil),
		pod("of-a-replicaset", controlledBy("apps/v1", "ReplicaSet")),
		pod("of-a-daemonset", controlledBy("apps/v1", "DaemonSet")),
		pod("owned-by-a-daemonset-not-controlled", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "owner", UID: "1"}}
		}),
		pod("of-another-daemonset-kind", controlledBy("example.com/v1", "DaemonSet")),
		pod("mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"} }),
		pod("with-emptydir", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}),
		pod("succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
	}
	var got []string
	for _, p := range podsToDrain(pods) {
		got = append(got, p.Name)
	}
	want := []string{"unreplicated", "of-a-replicaset", "owned-by-a-daemonset-not-controlled", "of-another-daemonset-kind", "with-emptydir", "succeeded"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("podsToDrain() (-want +got):\n%s", diff)
	}
}

func TestParseDrainOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		wantErr string
	}{
		"the chart's arguments": {args: []string{"--node-selector=nodelet.dev/release=companion", "--timeout=4m"}},
		"no node selector":      {args: []string{"--timeout=4m"}, wantErr: "--node-selector is required"},
		"no time":               {args: []string{"--node-selector=nodelet.dev/release=companion", "--timeout=0s"}, wantErr: "want a positive duration"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseDrainOptions(tc.args, flag.NewFlagSet("log", flag.ContinueOnError))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parseDrainOptions(%q): %v", tc.args, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseDrainOptions(%q) = %v, want an error saying %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

// TestDrainCompanions: the release's companion is cordoned and its pods
// evicted, but for its DaemonSet's and mirror pods; a pod whose
// disruption budget allows no eviction fails the drain at its timeout,
// named with the budget's reason; once the budget allows it, the drain
// ends when the evicted pods are gone. Another release's companion and
// its pods are left alone.
func TestDrainCompanions(t *testing.T) {
	client, err := kubernetes.NewForConfig(testenv.StartAPIServer(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	companion := map[string]string{"nodelet.dev/agent": "nodelet", "nodelet.dev/release": "companion", "nodelet.dev/release-namespace": "default"}
	other := map[string]string{"nodelet.dev/agent": "nodelet", "nodelet.dev/release": "other", "nodelet.dev/release-namespace": "default"}
	for name, l := range map[string]map[string]string{"host-nodelet": companion, "other-nodelet": other} {
		if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	newPod := func(name, node string, mutate func(*corev1.Pod)) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if mutate != nil {
			mutate(p)
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	newPod("web", "host-nodelet", nil)
	newPod("guarded", "host-nodelet", nil)
	// A budget does not guard a pending pod: this one runs, Ready.
	guarded, err := client.CoreV1().Pods("default").Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	guarded.Status.Phase = corev1.PodRunning
	guarded.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, guarded, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	newPod("of-a-daemonset", "host-nodelet", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "1", Controller: ptr.To(true)}}
	})
	newPod("mirror", "host-nodelet", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "hash"} })
	newPod("elsewhere", "other-nodelet", nil)
	// No disruption controller runs in envtest: the budget's status is
	// never observed, and the Eviction API refuses with 429 what it guards.
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
		},
	}
	if _, err := client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := drainOptions{nodeSelector: "nodelet.dev/release=companion,nodelet.dev/release-namespace=default", timeout: 5 * time.Second}

	err = drainCompanions(ctx, client, o, 200*time.Millisecond, testr.New(t))
	if err == nil {
		t.Fatal("drainCompanions() with a pod its disruption budget guards: no error, want one at the timeout")
	}
	for _, said := range []string{"pod default/guarded on host-nodelet: not evicted: Cannot evict pod as it would violate the pod's disruption budget", "pod default/web on host-nodelet: evicted, still terminating"} {
		if !strings.Contains(err.Error(), said) {
			t.Errorf("drainCompanions() = %v, want it to say %q", err, said)
		}
	}
	for _, name := range []string{"of-a-daemonset", "mirror", "elsewhere"} {
		if strings.Contains(err.Error(), name) {
			t.Errorf("drainCompanions() = %v, names pod %s, which is not drained", err, name)
		}
	}
	assertCordoned(ctx, t, client, map[string]bool{"host-nodelet": true, "other-nodelet": false})
	assertDeleting(ctx, t, client, "web")

	// nodelet: a pod being deleted is stopped, then deleted for good.
	nodelet, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		_ = wait.PollUntilContextCancel(nodelet, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					_ = client.CoreV1().Pods("default").Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
				}
			}
			return false, nil
		})
	}()
	if err := client.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, pdb.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	o.timeout = 30 * time.Second
	if err := drainCompanions(ctx, client, o, 200*time.Millisecond, testr.New(t)); err != nil {
		t.Fatalf("drainCompanions(): %v", err)
	}
	stop()
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	slices.Sort(left)
	if diff := cmp.Diff([]string{"elsewhere", "mirror", "of-a-daemonset"}, left); diff != "" {
		t.Errorf("pods after the drain (-want +got):\n%s", diff)
	}
}

// assertCordoned fails unless each Node's spec.unschedulable is as want.
func assertCordoned(ctx context.Context, t *testing.T, client kubernetes.Interface, want map[string]bool) {
	t.Helper()
	for name, cordoned := range want {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n.Spec.Unschedulable != cordoned {
			t.Errorf("Node %s: unschedulable %v, want %v", name, n.Spec.Unschedulable, cordoned)
		}
	}
}

// assertDeleting fails unless pod is being deleted (evicted).
func assertDeleting(ctx context.Context, t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case p.DeletionTimestamp == nil:
		t.Errorf("pod %s after the drain: not being deleted, want it evicted", name)
	}
}
