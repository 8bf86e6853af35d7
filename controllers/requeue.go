package controllers

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// requeueAfter collects the earliest time a pod needs another look.
type requeueAfter struct{ earliest time.Time }

func (q *requeueAfter) at(t time.Time) {
	if t.IsZero() {
		return
	}
	if q.earliest.IsZero() || t.Before(q.earliest) {
		q.earliest = t
	}
}

func (q *requeueAfter) in(now time.Time, d time.Duration) { q.at(now.Add(d)) }

func (q *requeueAfter) result(now time.Time) ctrl.Result {
	if q.earliest.IsZero() {
		return ctrl.Result{}
	}
	d := q.earliest.Sub(now)
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	return ctrl.Result{RequeueAfter: d}
}
