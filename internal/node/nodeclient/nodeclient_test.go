package nodeclient

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

func TestCacheOptionsSelectTheNodesOwnObjects(t *testing.T) {
	got := map[string]string{}
	for obj, by := range CacheOptions("worker-1").ByObject {
		got[fmt.Sprintf("%T", obj)] = by.Field.String()
	}
	want := map[string]string{
		"*v1.Pod":  "spec.nodeName=worker-1",
		"*v1.Node": "metadata.name=worker-1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("field selectors mismatch (-want +got):\n%s", diff)
	}
	if CacheOptions("worker-1").DefaultTransform == nil {
		t.Error("managed fields are kept in the cache")
	}
}

func TestClientOptionsReadWhatTheNodeMayNotWatchDirectly(t *testing.T) {
	var got []string
	for _, obj := range ClientOptions().Cache.DisableFor {
		got = append(got, fmt.Sprintf("%T", obj))
	}
	want := []string{fmt.Sprintf("%T", &corev1.Secret{}), fmt.Sprintf("%T", &corev1.ConfigMap{}), fmt.Sprintf("%T", &coordinationv1.Lease{})}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DisableFor mismatch (-want +got):\n%s", diff)
	}
}

func TestProtobufLeavesTheGivenConfigAlone(t *testing.T) {
	config := &rest.Config{Host: "https://api:6443"}
	got := Protobuf(config)
	if got.ContentType != "application/vnd.kubernetes.protobuf" || got.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("Protobuf() content types = %q, %q", got.ContentType, got.AcceptContentTypes)
	}
	if config.ContentType != "" || config.AcceptContentTypes != "" || got.Host != config.Host {
		t.Errorf("Protobuf() changed its argument or lost its host: %+v", config)
	}
}

func TestEventsComeFromTheKubeletOnTheNode(t *testing.T) {
	clientset := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recorder := NewEventRecorder(ctx, clientset, clientgoscheme.Scheme, "worker-1")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"}}
	recorder.Event(pod, corev1.EventTypeNormal, "Pulled", "pulled")

	await.Eventually(t, 10*time.Second, "the event written", func(ctx context.Context) error {
		events, err := clientset.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(events.Items) != 1 {
			return fmt.Errorf("%d events", len(events.Items))
		}
		if got, want := events.Items[0].Source, (corev1.EventSource{Component: "kubelet", Host: "worker-1"}); got != want {
			t.Fatalf("event source %+v, want %+v", got, want)
		}
		return nil
	})
}
