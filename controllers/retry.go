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
	failures[uid]++
	return doublingDelay(250*time.Millisecond, retryPeriod, failures[uid])
}

// doublingDelay is first after one failure in a row, doubled by each
// failure after it, and at most most.
func doublingDelay(first, most time.Duration, failures int) time.Duration {
	return min(first<<min(max(failures-1, 0), 20), most)
}
