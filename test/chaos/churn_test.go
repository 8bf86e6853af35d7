package chaos

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// churner keeps about target pods in its namespace: it creates one of a
// random kind when there are fewer, and deletes a random one (with a
// random grace period, 0 being a forced deletion) when there are enough.
type churner struct {
	client kubernetes.Interface
	ns     string
	image  string
	kinds  []podKind
	rng    *rand.Rand
	target int

	live    []string
	next    int
	created map[string]int
	deleted int
	// apiErrors are calls that failed, as they do while the API server
	// is stopped; the churn goes on.
	apiErrors int
}

// callTimeout bounds one API call, so that a stopped API server holds the
// churn up only that long.
const callTimeout = 10 * time.Second

// run churns until ctx ends.
func (c *churner) run(ctx context.Context) {
	for ctx.Err() == nil {
		// The pace of the churn is the scenario, not a wait.
		time.Sleep(500*time.Millisecond + time.Duration(c.rng.IntN(2000))*time.Millisecond)
		if len(c.live) < c.target {
			c.create(ctx)
		} else {
			c.delete(ctx, c.live[c.rng.IntN(len(c.live))], c.rng.Int64N(4))
		}
	}
}

func (c *churner) create(ctx context.Context) {
	kind := pickKind(c.kinds, c.rng)
	pod := newPod(c.ns, c.image, kind, c.next)
	c.next++
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := c.client.CoreV1().Pods(c.ns).Create(callCtx, pod, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		c.apiErrors++
		// It may have been made all the same: the cleanup lists them.
		return
	}
	c.created[kind.name]++
	c.live = append(c.live, pod.Name)
}

func (c *churner) delete(ctx context.Context, name string, grace int64) {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	err := c.client.CoreV1().Pods(c.ns).Delete(callCtx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(grace)})
	if err != nil && !apierrors.IsNotFound(err) {
		c.apiErrors++
		return
	}
	c.deleted++
	c.live = slices.DeleteFunc(c.live, func(n string) bool { return n == name })
}

func (c *churner) total() int {
	n := 0
	for _, count := range c.created {
		n += count
	}
	return n
}
