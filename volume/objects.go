package volume

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// objectCache shares reads of ConfigMaps and Secrets between pods. A pod's
// first set-up always reads afresh; a resync takes a copy read within the
// last half sync period, so the hundred pods of a namespace that all
// project its kube-root-ca.crt cost a few GETs a minute, not a hundred,
// and an update still reaches every pod within one sync period and a half.
//
// Resyncs fall due together: the pods of a burst are all set up within a
// second or two, and resync every sync period from then on. Those that
// find no fresh copy while a read of it is under way wait for that read
// instead of each sending its own GET.
type objectCache struct {
	mu      sync.Mutex
	entries map[objectKey]cachedObject
	reading map[objectKey]*sharedRead
}

type objectKey struct {
	kind, namespace, name string
}

type cachedObject struct {
	object any
	// err is a NotFound the API server answered; other errors are not kept.
	err    error
	readAt time.Time
}

// sharedRead is a read for a resync under way; done closes once answer
// holds what it read, error included.
type sharedRead struct {
	done    chan struct{}
	waiters int
	answer  cachedObject
}

// cachedGet returns the object under key if it was read no more than
// maxAge before now, else reads it with read and keeps the answer. With a
// maxAge (a resync), it waits for a read of the same object under way
// rather than starting another.
func cachedGet[T any](c *objectCache, key objectKey, now time.Time, maxAge time.Duration, read func() (T, error)) (T, error) {
	c.mu.Lock()
	entry, ok := c.entries[key]
	if ok && maxAge > 0 && now.Sub(entry.readAt) <= maxAge {
		c.mu.Unlock()
		object, _ := entry.object.(T)
		return object, entry.err
	}
	if maxAge <= 0 {
		c.mu.Unlock()
		object, err := read()
		c.keep(key, object, err, now, maxAge)
		return object, err
	}
	if shared := c.reading[key]; shared != nil {
		shared.waiters++
		c.mu.Unlock()
		<-shared.done
		object, _ := shared.answer.object.(T)
		return object, shared.answer.err
	}
	if c.reading == nil {
		c.reading = map[objectKey]*sharedRead{}
	}
	shared := &sharedRead{done: make(chan struct{})}
	c.reading[key] = shared
	c.mu.Unlock()

	object, err := read()
	c.mu.Lock()
	delete(c.reading, key)
	c.mu.Unlock()
	c.keep(key, object, err, now, maxAge)
	shared.answer = cachedObject{object: object, err: err}
	close(shared.done)
	return object, err
}

// keep stores what a read answered, unless it failed other than with a
// NotFound (a later read tries again).
func (c *objectCache) keep(key objectKey, object any, err error, now time.Time, maxAge time.Duration) {
	if err != nil && !apierrors.IsNotFound(err) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[objectKey]cachedObject{}
	}
	// Objects no pod asked for in a long while (their namespace gone,
	// say) are dropped as others are read for resyncs (a first set-up's
	// maxAge of zero would drop them all).
	if maxAge > 0 {
		for k, e := range c.entries {
			if now.Sub(e.readAt) > 10*maxAge {
				delete(c.entries, k)
			}
		}
	}
	c.entries[key] = cachedObject{object: object, err: err, readAt: now}
}
