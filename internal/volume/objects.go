package volume

import (
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// objectCache shares reads of ConfigMaps and Secrets between pods. A pod's
// first set-up wants a read begun after it asked; a resync takes a copy
// read within the last half sync period, so the hundred pods of a
// namespace that all project its kube-root-ca.crt cost a few GETs a
// minute, not a hundred, and an update still reaches every pod within one
// sync period and a half.
//
// Pods come in bursts: those of a burst are set up within a second or two,
// and resync together every sync period from then on. A resync that finds
// no fresh copy while a read of it is under way waits for that read; a
// first set-up that arrives while a read is under way (begun before it
// asked, so perhaps before an update it must see) waits for the read
// queued behind it, which every first set-up arriving meanwhile shares.
// A burst's first set-ups then cost a GET per read's round trip, not one
// each.
type objectCache struct {
	mu      sync.Mutex
	entries map[objectKey]cachedObject
	// reading is the read of each object under way, queued the one that
	// follows it.
	reading map[objectKey]*sharedRead
	queued  map[objectKey]*sharedRead
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

// sharedRead is a read that callers besides its owner wait for; done
// closes once answer holds what it read, error included.
type sharedRead struct {
	done chan struct{}
	// started is set once the owner sends the read: a first set-up may
	// join it only before.
	started bool
	waiters int
	answer  cachedObject
}

// cachedGet returns the object under key if it was read no more than
// maxAge before now (a resync), else what a read shares: with a maxAge,
// the read under way if any; without (a first set-up), a read not yet
// sent.
func cachedGet[T any](c *objectCache, key objectKey, now time.Time, maxAge time.Duration, read func() (T, error)) (T, error) {
	c.mu.Lock()
	entry, ok := c.entries[key]
	if ok && maxAge > 0 && now.Sub(entry.readAt) <= maxAge {
		c.mu.Unlock()
		object, _ := entry.object.(T)
		return object, entry.err
	}
	if shared := c.joinable(key, maxAge > 0); shared != nil {
		shared.waiters++
		c.mu.Unlock()
		<-shared.done
		object, _ := shared.answer.object.(T)
		return object, shared.answer.err
	}
	if c.reading == nil {
		c.reading, c.queued = map[objectKey]*sharedRead{}, map[objectKey]*sharedRead{}
	}
	own := &sharedRead{done: make(chan struct{})}
	ahead := c.reading[key]
	if ahead == nil {
		c.reading[key] = own
	} else {
		// The read under way hands over to this one when it ends.
		c.queued[key] = own
	}
	c.mu.Unlock()
	if ahead != nil {
		<-ahead.done
	}

	c.mu.Lock()
	own.started = true
	c.mu.Unlock()
	object, err := read()
	c.mu.Lock()
	delete(c.reading, key)
	if next := c.queued[key]; next != nil {
		delete(c.queued, key)
		c.reading[key] = next
	}
	c.mu.Unlock()
	c.keep(key, object, err, now, maxAge)
	own.answer = cachedObject{object: object, err: err}
	close(own.done)
	return object, err
}

// joinable is the read of key a caller may wait for instead of reading:
// for a resync the read under way or queued; for a first set-up one not
// yet sent. Called with mu held.
func (c *objectCache) joinable(key objectKey, resync bool) *sharedRead {
	if r := c.reading[key]; r != nil && (resync || !r.started) {
		return r
	}
	return c.queued[key]
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
