package main

// Tests of `nodelet-approver remove-companions`: the selector (pure), the
// flags, and the removal against a real API server (envtest, package
// internal/testenv), which holds Nodes and pods though nothing runs them.

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

func TestCompanionSelector(t *testing.T) {
	release := labels.Set{"nodelet.dev/release": "companion", "nodelet.dev/release-namespace": "nodelet-system"}
	for name, tc := range map[string]struct {
		nodeLabels labels.Set
		want       bool
	}{
		"the release's companion": {
			nodeLabels: labels.Merge(release, labels.Set{"nodelet.dev/agent": "nodelet"}), want: true,
		},
		"a Node with the release's labels that nodelet did not register": {
			nodeLabels: release,
		},
		"another release's companion": {
			nodeLabels: labels.Set{"nodelet.dev/release": "other", "nodelet.dev/release-namespace": "nodelet-system", "nodelet.dev/agent": "nodelet"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			selector, err := companionSelector(release.String())
			if err != nil {
				t.Fatal(err)
			}
			if got := selector.Matches(tc.nodeLabels); got != tc.want {
				t.Errorf("%s selects %v: %v, want %v", selector, tc.nodeLabels, got, tc.want)
			}
		})
	}
	if _, err := companionSelector(""); err == nil {
		t.Error("an empty node selector taken, want it refused: it would select every companion")
	}
}

func TestParseRemoveOptions(t *testing.T) {
	valid := []string{"--namespace=nodelet-system", "--pod-selector=app.kubernetes.io/instance=companion", "--node-selector=nodelet.dev/release=companion"}
	for name, tc := range map[string]struct {
		args    []string
		wantErr string
	}{
		"the chart's arguments": {args: valid},
		"no node selector":      {args: valid[:2], wantErr: "--node-selector is required"},
		"no pod selector":       {args: []string{valid[0], valid[2]}, wantErr: "--pod-selector are required"},
		"a bad node selector":   {args: append(valid, "--node-selector=a=b=c"), wantErr: "--node-selector"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseRemoveOptions(tc.args, flag.NewFlagSet("log", flag.ContinueOnError))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parseRemoveOptions(%q): %v", tc.args, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseRemoveOptions(%q) = %v, want an error saying %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

// TestRemoveCompanions: while a DaemonSet pod is there, no Node is
// deleted; once it is gone, the release's companion Nodes are, and no
// other Node.
func TestRemoveCompanions(t *testing.T) {
	client, err := kubernetes.NewForConfig(testenv.StartAPIServer(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	release := map[string]string{"nodelet.dev/release": "companion", "nodelet.dev/release-namespace": "default"}
	companion := map[string]string{"nodelet.dev/agent": "nodelet"}
	for k, v := range release {
		companion[k] = v
	}
	nodes := map[string]map[string]string{
		"host-nodelet":  companion,
		"host":          release,
		"other-nodelet": {"nodelet.dev/agent": "nodelet", "nodelet.dev/release": "other", "nodelet.dev/release-namespace": "default"},
	}
	for name, l := range nodes {
		if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "companion-nodelet-x", Namespace: "default", Labels: map[string]string{"app.kubernetes.io/instance": "companion"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nodelet", Image: "nodelet"}}},
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	o := removeOptions{
		namespace: "default", podSelector: "app.kubernetes.io/instance=companion",
		nodeSelector: labels.Set(release).String(), timeout: time.Second,
	}

	if err := removeCompanions(ctx, client, o, 100*time.Millisecond, testr.New(t)); err == nil {
		t.Fatal("removeCompanions() with the DaemonSet's pod still there: no error, want one after the timeout")
	}
	assertNodes(ctx, t, client, "host-nodelet", "host", "other-nodelet")

	// An unscheduled pod goes at once.
	if err := client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	o.timeout = 30 * time.Second
	if err := removeCompanions(ctx, client, o, 100*time.Millisecond, testr.New(t)); err != nil {
		t.Fatalf("removeCompanions(): %v", err)
	}
	assertNodes(ctx, t, client, "host", "other-nodelet")
}

// assertNodes fails unless the Nodes are exactly want.
func assertNodes(ctx context.Context, t *testing.T, client kubernetes.Interface, want ...string) {
	t.Helper()
	for _, name := range []string{"host-nodelet", "host", "other-nodelet"} {
		_, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		wanted := slices.Contains(want, name)
		switch {
		case wanted && err != nil:
			t.Errorf("Node %s: %v, want it kept", name, err)
		case !wanted && !apierrors.IsNotFound(err):
			t.Errorf("Node %s: %v, want it deleted", name, err)
		}
	}
}
