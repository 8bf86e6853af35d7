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
type objectCache struct {
	mu      sync.Mutex
	entries map[objectKey]cachedObject
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

// cachedGet returns the object under key if it was read no more than
// maxAge before now, else reads it with read and keeps the answer.
func cachedGet[T any](c *objectCache, key objectKey, now time.Time, maxAge time.Duration, read func() (T, error)) (T, error) {
	c.mu.Lock()
	entry, ok := c.entries[key]
	c.mu.Unlock()
	if ok && maxAge > 0 && now.Sub(entry.readAt) <= maxAge {
		object, _ := entry.object.(T)
		return object, entry.err
	}
	object, err := read()
	if err != nil && !apierrors.IsNotFound(err) {
		return object, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[objectKey]cachedObject{}
	}
	// Objects no pod asked for in a long while (their namespace gone,
	// say) are dropped as others are read.
	for k, e := range c.entries {
		if now.Sub(e.readAt) > 10*maxAge {
			delete(c.entries, k)
		}
	}
	c.entries[key] = cachedObject{object: object, err: err, readAt: now}
	return object, err
}
