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

// A burst's pods are set up within a second or two: a first set-up must
// see what the API server held when it asked, so it cannot take a read
// sent before, but the first set-ups arriving while one read is under way
// share the one read queued behind it. With a read function that holds
// its first call and answers each call with its number.
func TestFirstSetUpsShareTheReadQueuedBehindTheOneUnderWay(t *testing.T) {
	c := &objectCache{}
	key := objectKey{"configmap", "shop", "kube-root-ca.crt"}
	held := make(chan struct{})
	var release sync.Once
	releaseRead := func() { release.Do(func() { close(held) }) }
	var mu sync.Mutex
	reads := 0
	read := func() (string, error) {
		mu.Lock()
		reads++
		n := reads
		mu.Unlock()
		if n == 1 {
			<-held
		}
		return fmt.Sprintf("read %d", n), nil
	}
	readsSent := func() int {
		mu.Lock()
		defer mu.Unlock()
		return reads
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { releaseRead(); wg.Wait() })

	first := make(chan string, 1)
	wg.Go(func() {
		got, _ := cachedGet(c, key, start, 0, read)
		first <- got
	})
	waitFor(t, "the first set-up's read to be sent", func() bool { return readsSent() == 1 })

	const later = 4
	answers := make(chan string, later)
	for range later {
		wg.Go(func() {
			got, _ := cachedGet(c, key, start, 0, read)
			answers <- got
		})
	}
	waitFor(t, "the later set-ups to queue behind the read under way", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		// The queued read's owner and the others waiting for it.
		return c.queued[key] != nil && c.queued[key].waiters == later-1
	})
	releaseRead()
	wg.Wait()
	close(answers)

	if got := <-first; got != "read 1" {
		t.Errorf("the first set-up got %q, want read 1", got)
	}
	for got := range answers {
		if got != "read 2" {
			t.Errorf("a set-up that asked while read 1 was under way got %q, want read 2, sent after it asked", got)
		}
	}
	if n := readsSent(); n != 2 {
		t.Errorf("%d first set-ups sent %d reads, want 2", later+1, n)
	}
}

func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 10s waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
