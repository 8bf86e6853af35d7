package pleg

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// Cache holds the runtime's record of each pod as the PLEG last read it,
// with the time the read started. A reconcile asks for a record newer than
// its own last action on the pod, so it never decides on a state from before
// what it last did (the kubelet's GetNewerThan rule).
type Cache struct {
	mu   sync.RWMutex
	pods map[types.UID]cachedPod
	// timestamp is the start of the last complete relist: every pod's record
	// is at least that fresh, whether or not it changed, but for the
	// records the PLEG outdated and left to be read again.
	timestamp time.Time
	// minTimes holds, by pod, the time before which its records no longer
	// serve: the end of nodelet's last action on it.
	minTimes map[types.UID]time.Time
}

type cachedPod struct {
	status   *kubecontainer.PodStatus
	modified time.Time
	// outdatedAt is when the PLEG last saw the runtime differ from this
	// pod's record without reading it again (Outdate): a record read
	// before then is out of date however fresh later relists are.
	outdatedAt time.Time
	// settled is true once a reconcile found nothing left to do on this
	// record (Settle): a runtime holding just what it holds is no news.
	settled bool
}

func NewCache() *Cache {
	return &Cache{pods: map[types.UID]cachedPod{}, minTimes: map[types.UID]time.Time{}}
}

// Set records a pod's status as read from the runtime at (or after) t.
func (c *Cache) Set(uid types.UID, status *kubecontainer.PodStatus, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.pods[uid]
	if ok && old.modified.After(t) {
		// A reconcile's direct read already stored something fresher.
		return
	}
	c.pods[uid] = cachedPod{status: status, modified: t, outdatedAt: old.outdatedAt}
}

// Settle notes that a reconcile found nothing left to do on status, the
// pod's record it read. A record stored since is not settled.
func (c *Cache) Settle(uid types.UID, status *kubecontainer.PodStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if entry, ok := c.pods[uid]; ok && entry.status == status {
		entry.settled = true
		c.pods[uid] = entry
	}
}

// settledOn reports whether the pod's record is settled and holds the
// objects listed holds, in the same states.
func (c *Cache) settledOn(uid types.UID, listed *kubecontainer.PodStatus) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	entry, ok := c.pods[uid]
	return ok && entry.settled && sameObjects(entry.status, listed)
}

// Delete drops a pod the runtime no longer has.
func (c *Cache) Delete(uid types.UID, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods[uid]; ok && old.modified.After(t) {
		return
	}
	delete(c.pods, uid)
}

// Invalidate has the pod's records read before t no longer served by
// GetFresh: nodelet acted on the pod at t, or was told its state changed
// then. A later time already set stays.
func (c *Cache) Invalidate(uid types.UID, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raiseMinTime(uid, t)
}

// raiseMinTime moves the pod's minimum time to t unless it is later
// already; c.mu is held.
func (c *Cache) raiseMinTime(uid types.UID, t time.Time) {
	if t.After(c.minTimes[uid]) {
		c.minTimes[uid] = t
	}
}

// Outdate is Invalidate for a pod whose record the runtime no longer
// matches as of t, seen by the PLEG, which leaves the read to the pod's
// reconcile: until a read that began after t replaces it, the record is
// not made fresh by the relists that follow, which see no further change
// of the pod.
func (c *Cache) Outdate(uid types.UID, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.raiseMinTime(uid, t)
	if entry, ok := c.pods[uid]; ok && t.After(entry.outdatedAt) {
		entry.outdatedAt = t
		c.pods[uid] = entry
	}
}

// GetFresh returns the pod's record if it reflects the runtime after the
// last Invalidate of the pod.
func (c *Cache) GetFresh(uid types.UID) (*kubecontainer.PodStatus, bool) {
	c.mu.RLock()
	minTime := c.minTimes[uid]
	c.mu.RUnlock()
	return c.GetNewerThan(uid, minTime)
}

// Forget drops all the cache knows of a pod nodelet removed.
func (c *Cache) Forget(uid types.UID, t time.Time) {
	c.Delete(uid, t)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.minTimes, uid)
}

// UpdateTime marks every record as fresh as of t: a relist that started at
// t saw no other change.
func (c *Cache) UpdateTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.timestamp) {
		c.timestamp = t
	}
}

// Latest returns the pod's record however old it is, for comparisons only:
// what a reconcile decides on comes from GetFresh.
func (c *Cache) Latest(uid types.UID) (*kubecontainer.PodStatus, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	entry, ok := c.pods[uid]
	return entry.status, ok
}

// GetNewerThan returns the pod's record if it reflects the runtime at a
// time after minTime. A pod the runtime does not hold has an empty record.
func (c *Cache) GetNewerThan(uid types.UID, minTime time.Time) (*kubecontainer.PodStatus, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	entry, ok := c.pods[uid]
	outdated := ok && !entry.modified.After(entry.outdatedAt)
	fresh := (c.timestamp.After(minTime) && !outdated) || (ok && entry.modified.After(minTime))
	if !fresh {
		return nil, false
	}
	if !ok {
		return &kubecontainer.PodStatus{UID: uid}, true
	}
	return entry.status, true
}

// ByName returns the records of runtime pods carrying the given name,
// whatever their UID.
func (c *Cache) ByName(namespace, name string) []*kubecontainer.PodStatus {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*kubecontainer.PodStatus
	for _, p := range c.pods {
		if p.status.Namespace == namespace && p.status.Name == name {
			out = append(out, p.status)
		}
	}
	return out
}
