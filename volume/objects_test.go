package volume

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

// The pods of a burst are set up within a second and resync together from
// then on: those whose resync finds the shared copy stale while its read
// is under way wait for that read, and the whole herd costs one GET. On
// the fake clientset, whose ConfigMap GET is held until every other resync
// waits.
func TestResyncsFallingDueTogetherWaitForOneRead(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t, Options{SyncPeriod: 30 * time.Second}, rootCAConfigMap("shop", "CA-1"))
	pods := make([]*corev1.Pod, 5)
	var refreshAt time.Time
	for i := range pods {
		pods[i] = makePod(apiAccessVolume())
		pods[i].Name, pods[i].UID = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i))
		_, refreshAt = setUp(t, e, pods[i])
	}
	firstGets := configMapGets(e)

	held := make(chan struct{})
	var release sync.Once
	releaseRead := func() { release.Do(func() { close(held) }) }
	var wg sync.WaitGroup
	// On failure too, the resyncs end before the folders go.
	t.Cleanup(func() { releaseRead(); wg.Wait() })
	e.client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, apiruntime.Object, error) {
		<-held
		return false, nil, nil
	})
	e.clock.SetTime(refreshAt)
	errs := make(chan error, len(pods))
	for _, pod := range pods {
		wg.Go(func() {
			_, _, err := e.m.SetUpPod(context.Background(), pod)
			errs <- err
		})
	}
	key := objectKey{"configmap", "shop", "kube-root-ca.crt"}
	deadline := time.Now().Add(10 * time.Second)
	for waitingFor(&e.m.objects, key) < len(pods)-1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the %d other resyncs wait for the read under way after 10s, want all", waitingFor(&e.m.objects, key), len(pods)-1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	releaseRead()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("resync: %v", err)
		}
	}
	if got := configMapGets(e) - firstGets; got != 1 {
		t.Errorf("%d resyncs falling due together made %d ConfigMap GETs, want 1", len(pods), got)
	}
}

// waitingFor is how many resyncs wait for the read of key under way.
func waitingFor(c *objectCache, key objectKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if shared := c.reading[key]; shared != nil {
		return shared.waiters
	}
	return 0
}

func configMapGets(e *testEnv) int {
	n := 0
	for _, a := range e.client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "configmaps" {
			n++
		}
	}
	return n
}
