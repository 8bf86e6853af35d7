package controllers

// Reporting: re-observing a pod after acting on it, generating its status
// and patching it to the API server.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptrace"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/pod/podutil"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// report is the last step of every branch of Reconcile: re-observe the pod
// and report what was seen. After an action on the runtime (acted), the
// pod is marked synced and its record read again, so that neither this
// status nor the next reconcile rests on a state from before the action;
// then its status is written. It returns the record it reported.
func (r *PodReconciler) report(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, acted, terminal bool) (*kubecontainer.PodStatus, error) {
	if acted {
		r.markSynced(pod.UID)
		var err error
		if status, err = r.readPodStatus(ctx, pod.UID); err != nil {
			return nil, err
		}
	}
	return status, r.writeStatus(ctx, pod, status, terminal)
}

// settle tells the PLEG's cache that the pod's record, read after this
// sync, leaves nothing to do: no error to retry, nothing to start, kill or
// resize, no back-off to wait out. The relist that then finds the runtime
// holding just that sends no event, and no reconcile repeats this one.
func (r *PodReconciler) settle(pod *corev1.Pod, status *kubecontainer.PodStatus, result noderuntime.SyncResult) {
	if result.Err != nil || len(result.ContainerErrors) > 0 {
		return
	}
	next := noderuntime.ComputePodActions(pod, status, r.Prober.Results(pod.UID), r.Clock.Now())
	if next.NoChange() && len(next.ContainersInBackOff) == 0 {
		r.cache.Settle(pod.UID, status)
	}
}

// writeStatus generates the pod's status and patches it to the API server
// when it differs from what the server has.
func (r *PodReconciler) writeStatus(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, terminal bool) error {
	return r.writeStatusFailing(ctx, pod, status, terminal, podstatus.DeadlineFailure(pod, r.Clock.Now()))
}

// writeStatusFailing is writeStatus with the pod's failure, if any.
func (r *PodReconciler) writeStatusFailing(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, terminal bool, failure *podstatus.Failure) error {
	now := r.Clock.Now()
	merged := r.generateStatus(pod, status, terminal, failure, now)
	r.starts.observe(pod, &merged, now)
	r.Prober.UpdatePod(pod, &merged)
	writtenAt, written, err := r.patchStatus(ctx, pod, merged)
	if written {
		if breakdown, done := r.breakdowns.written(pod, &merged, now, writtenAt); done {
			r.tellStart(ctx, pod, breakdown)
		}
	}
	return err
}

// generateStatus is the pod's status from its runtime record, the probes'
// results and the reasons of its last sync, merged with the API server's.
func (r *PodReconciler) generateStatus(pod *corev1.Pod, status *kubecontainer.PodStatus, terminal bool, failure *podstatus.Failure, now time.Time) corev1.PodStatus {
	probes := r.Prober.Results(pod.UID)
	started, ready := r.Prober.StartedAndReady(pod, status, probes)
	return podstatus.Generate(podstatus.Input{
		Pod:      pod,
		Runtime:  status,
		Waiting:  r.reasons.get(pod.UID),
		Started:  started,
		Ready:    ready,
		HostIPs:  r.HostIPs(),
		Terminal: terminal,
		Failure:  failure,
		Now:      now,

		ResizeConditions: r.resizes.list(pod.UID, terminal),
	})
}

// patchStatus writes merged as the pod's status when it differs from what
// the API server has, and reports whether the server now holds it and
// since when nodelet knows: when the server's answer began to arrive.
func (r *PodReconciler) patchStatus(ctx context.Context, pod *corev1.Pod, merged corev1.PodStatus) (time.Time, bool, error) {
	if podutil.IsStaticPod(pod) {
		return r.patchMirrorStatus(ctx, pod, merged)
	}
	if podstatus.Equal(pod.Status, merged) {
		return r.Clock.Now(), true, nil
	}
	patch, err := statusPatch(pod.UID, pod.Status, merged)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("preparing status patch of pod %s: %w", klog.KObj(pod), err)
	}
	// The answer, the whole Pod, is decoded into patched: no copy of pod.
	patched := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	r.written.send(pod.UID, pod.ResourceVersion, merged)
	traced, answered := withAnswerTime(ctx, r.Clock)
	err = r.Client.Status().Patch(traced, patched, client.RawPatch(types.StrategicMergePatchType, patch))
	if err != nil {
		r.written.unsend(pod.UID)
	}
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), isUIDMismatch(err):
		// Gone from the API (a node may not even read a deleted pod), or
		// replaced by a Pod of the same name: this status is for no one.
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("patching status of pod %s: %w", klog.KObj(pod), err)
	}
	r.written.record(pod.UID, pod.ResourceVersion, patched.ResourceVersion, patched.Status)
	klog.FromContext(ctx).V(1).Info("Patched pod status", "pod", klog.KObj(pod), "phase", merged.Phase)
	return answered(), true, nil
}

// withAnswerTime returns ctx with its HTTP requests traced, and a func
// that says when the answer to the last of them began to arrive, on clk.
// That moment is when nodelet knows the API server holds a write: the
// answer's reading and decoding after it, and the wait for a CPU on a busy
// node, are not the server's. Without an HTTP request (a fake client),
// the func says now.
func withAnswerTime(ctx context.Context, clk clock.PassiveClock) (context.Context, func() time.Time) {
	var mu sync.Mutex
	var at time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() {
		mu.Lock()
		defer mu.Unlock()
		at = clk.Now()
	}}
	return httptrace.WithClientTrace(ctx, trace), func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if at.IsZero() {
			return clk.Now()
		}
		return at
	}
}

// statusPatch is a strategic merge patch from old to new status that also
// carries the pod's UID, so that it fails on a Pod recreated under the same
// name.
func statusPatch(uid types.UID, old, new corev1.PodStatus) ([]byte, error) {
	oldJSON, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, err
	}
	newJSON, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: new})
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Pod{})
}

// isUIDMismatch reports whether a write failed on the UID it carried as a
// precondition: the Pod under that name is another one now.
func isUIDMismatch(err error) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "metadata.uid" {
			return true
		}
	}
	return false
}
