package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// prepareRetryDelay is how soon a pod whose volumes could not be set up is
// tried again: quickly at first — the Node authorizer learns of a pod's
// binding a moment after nodelet does, and refuses its token until then —
// then backing off to the usual retry period for errors that last.
func (r *PodReconciler) prepareRetryDelay(uid types.UID) time.Duration {
	return r.quickRetryDelay(r.prepareFailures, uid)
}

// quickRetryDelay counts one more failure in a row of the pod in failures
// and returns how soon to try again: 250ms, doubling up to retryPeriod.
func (r *PodReconciler) quickRetryDelay(failures map[types.UID]int, uid types.UID) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := failures[uid]
	failures[uid] = n + 1
	delay := 250 * time.Millisecond << min(n, 6)
	return min(delay, retryPeriod)
}
