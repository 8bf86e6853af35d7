package controllers

// The reconciler against a cache that never sees nodelet's own status
// writes: envtest and the CRI fake, as pod_controller_test.go, with the
// reconciler's client serving each Pod as it was before nodelet's first
// status write.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// laggingClient serves every Pod it reads as it was before the first
// status write through it, and counts its reads and status writes.
type laggingClient struct {
	client.Client
	mu      sync.Mutex
	before  map[types.NamespacedName]*corev1.Pod
	reads   map[types.NamespacedName]int
	patches map[types.NamespacedName]int
}

func (c *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.reads[key]++
		if before := c.before[key]; before != nil {
			before.DeepCopyInto(pod)
		}
	}
	return nil
}

func (c *laggingClient) Status() client.SubResourceWriter { return laggingStatus{c.Client.Status(), c} }

func (c *laggingClient) counts(key types.NamespacedName) (reads, patches int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[key], c.patches[key]
}

type laggingStatus struct {
	client.SubResourceWriter
	c *laggingClient
}

func (s laggingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	key := client.ObjectKeyFromObject(obj)
	s.c.mu.Lock()
	if _, ok := s.c.before[key]; !ok {
		s.c.before[key] = obj.(*corev1.Pod).DeepCopy()
	}
	s.c.patches[key]++
	s.c.mu.Unlock()
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// A reconcile that reads the Pod from before nodelet's own write works
// from the status written: the running pod's status is written once, not
// again at every reconcile with new transition times.
func TestAStatusIsNotWrittenAgainFromACacheThatHasNotSeenIt(t *testing.T) {
	var lagging *laggingClient
	var reconciler *PodReconciler
	env := startReconcilerWith(t, func(r *PodReconciler) {
		lagging = &laggingClient{Client: r.Client, before: map[types.NamespacedName]*corev1.Pod{},
			reads: map[types.NamespacedName]int{}, patches: map[types.NamespacedName]int{}}
		r.Client = lagging
		reconciler = r
	})
	ctx := context.Background()
	env.createNamespace(t, "lag")
	pod := testPod("lag", "web")
	if err := env.client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(pod)
	running := env.waitForPod(t, key, "Running", running)

	// Reconciles that each read the stale Pod.
	reads, _ := lagging.counts(key)
	for i := 0; i < 3; i++ {
		reconciler.EnqueuePod(ctx, pod.Namespace, pod.Name, running.UID)
		await.Eventually(t, 30*time.Second, fmt.Sprintf("reconcile %d after Running", i+1), func(context.Context) error {
			if now, _ := lagging.counts(key); now <= reads+i {
				return fmt.Errorf("%d reads of the pod, want more than %d", now, reads+i)
			}
			return nil
		})
	}
	// Let the last reconcile finish its write, if it makes one: the next
	// read is of a reconcile after it.
	reconciler.EnqueuePod(ctx, pod.Namespace, pod.Name, running.UID)
	await.Eventually(t, 30*time.Second, "one more reconcile", func(context.Context) error {
		if now, _ := lagging.counts(key); now <= reads+3 {
			return fmt.Errorf("%d reads", now)
		}
		return nil
	})
	if _, patches := lagging.counts(key); patches != 1 {
		t.Errorf("%d status writes of a pod that went to Running once, want 1", patches)
	}
}
