package controllers

// Static pods: the pods of the node's manifests (package staticpod), run by
// the same reconcile as the API server's pods, keyed by their own UID,
// with their status shown on their mirror pod, the API server's copy that
// the node creates, keeps and deletes, as the kubelet's syncPod and
// HandlePodCleanups do. None of it waits for the API server: a static pod
// runs while it is unreachable (kubeadm's own API server is one), and its
// mirror pod follows once it answers.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// staticPodSource is what the reconciler asks of the static pod sources
// (package staticpod's Sources).
type staticPodSource interface {
	Get(key types.NamespacedName) (*corev1.Pod, bool)
	List() []*corev1.Pod
	// Ready: every source was read once; until then a mirror pod or a
	// runtime pod without a static pod may only not be read yet.
	Ready() bool
}

// mirrorRetry is how soon a mirror pod or a status that could not be
// written is tried again: the API server may be down for a while.
const mirrorRetry = 5 * time.Second

// waitForAPIRetry is how soon a pod of the API server is looked at again
// while the manager's cache has not synced.
const waitForAPIRetry = time.Second

// staticPods is what the reconciler keeps of the static pods it runs.
type staticPods struct {
	mu sync.Mutex
	// uids is the UID each static pod name was last run under.
	uids map[types.NamespacedName]types.UID
	// statuses is each static pod's last status, by UID: the kubelet's
	// status manager keeps it so, as no Pod in the API holds it.
	statuses map[types.UID]corev1.PodStatus
	// pending are the static pods whose mirror pod or status the API
	// server has not taken yet.
	pending map[types.UID]bool
}

func (s *staticPods) ran(key types.NamespacedName, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uids == nil {
		s.uids = map[types.NamespacedName]types.UID{}
	}
	s.uids[key] = uid
}

// gone forgets the static pod last run under key, and returns its UID.
func (s *staticPods) gone(key types.NamespacedName) (types.UID, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	uid, ok := s.uids[key]
	delete(s.uids, key)
	return uid, ok
}

func (s *staticPods) status(uid types.UID) (corev1.PodStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	status, ok := s.statuses[uid]
	return *status.DeepCopy(), ok
}

func (s *staticPods) setStatus(uid types.UID, status corev1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.statuses == nil {
		s.statuses = map[types.UID]corev1.PodStatus{}
	}
	s.statuses[uid] = *status.DeepCopy()
}

func (s *staticPods) setPending(uid types.UID, pending bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[types.UID]bool{}
	}
	if pending {
		s.pending[uid] = true
	} else {
		delete(s.pending, uid)
	}
}

func (s *staticPods) isPending(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending[uid]
}

func (s *staticPods) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.statuses, uid)
	delete(s.pending, uid)
}

func (r *PodReconciler) apiSynced() bool {
	return r.APISynced == nil || r.APISynced()
}

func (r *PodReconciler) staticSourcesReady() bool {
	return r.StaticPods == nil || r.StaticPods.Ready()
}

// staticPod returns the static pod named key, with its last status.
func (r *PodReconciler) staticPod(key types.NamespacedName) (*corev1.Pod, bool) {
	if r.StaticPods == nil {
		return nil, false
	}
	pod, ok := r.StaticPods.Get(key)
	if !ok {
		return nil, false
	}
	if status, ok := r.statics.status(pod.UID); ok {
		pod.Status = status
	}
	return pod, true
}

// reconcileStatic runs a static pod as Reconcile runs an API pod, then
// brings its mirror pod in line. The runtime pods under its name with
// another UID (an edited manifest's previous pod) are removed.
func (r *PodReconciler) reconcileStatic(ctx context.Context, pod *corev1.Pod) (ctrl.Result, error) {
	key := client.ObjectKeyFromObject(pod)
	r.statics.ran(key, pod.UID)
	r.removeOrphans(ctx, pod.Namespace, pod.Name, pod.UID)
	status, err := r.podStatus(ctx, pod.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	var result ctrl.Result
	if podIsTerminal(pod, status) {
		result, err = r.syncTerminatedPod(ctx, pod, status)
	} else {
		result, err = r.syncPod(ctx, pod, status)
	}
	if err != nil {
		return result, err
	}
	if err := r.syncMirrorPod(ctx, pod); err != nil {
		r.mirrorRetryLog(ctx, pod.UID).Info("Could not bring the mirror pod in line; trying again", "pod", klog.KObj(pod), "err", err.Error())
		r.statics.setPending(pod.UID, true)
	}
	if r.statics.isPending(pod.UID) && (result.RequeueAfter == 0 || result.RequeueAfter > mirrorRetry) {
		result.RequeueAfter = mirrorRetry
	}
	return result, nil
}

// mirrorRetryLog is the logger for a failed mirror pod write: the first
// failure is worth an operator's eye, the retries every mirrorRetry while
// the API server is away are not.
func (r *PodReconciler) mirrorRetryLog(ctx context.Context, uid types.UID) logr.Logger {
	logger := klog.FromContext(ctx)
	if r.statics.isPending(uid) {
		return logger.V(4)
	}
	return logger
}

// reconcileBeforeAPI runs the static pod named key, if there is one, and
// holds the API's pods until the cache has synced: only static pods run
// before the API server has answered, and the runtime pod of one whose
// manifest went stops then. done says Reconcile ends with result.
func (r *PodReconciler) reconcileBeforeAPI(ctx context.Context, key types.NamespacedName) (result ctrl.Result, done bool, err error) {
	if static, ok := r.staticPod(key); ok {
		result, err = r.reconcileStatic(ctx, static)
		return result, true, err
	}
	if !r.apiSynced() {
		r.stopGoneStaticPod(ctx, key)
		return ctrl.Result{RequeueAfter: waitForAPIRetry}, true, nil
	}
	return ctrl.Result{}, false, nil
}

// reconcileWithoutPod handles a name with no API pod of the node's to run:
// none at all, or a mirror pod whose static pod is gone. Until every
// static pod source was read, the runtime pod under the name may be a
// static pod not read yet, and nothing is removed. done says Reconcile
// ends with result.
func (r *PodReconciler) reconcileWithoutPod(ctx context.Context, pod *corev1.Pod) (result ctrl.Result, done bool, err error) {
	if pod != nil && !podutil.IsMirrorPod(pod) {
		return ctrl.Result{}, false, nil
	}
	if !r.staticSourcesReady() {
		return ctrl.Result{RequeueAfter: waitForAPIRetry}, true, nil
	}
	if pod != nil {
		result, err = r.reconcileOrphanedMirror(ctx, pod)
		return result, true, err
	}
	return ctrl.Result{}, false, nil
}

// stopGoneStaticPod removes the runtime pod of a static pod whose manifest
// is gone, without the API server.
func (r *PodReconciler) stopGoneStaticPod(ctx context.Context, key types.NamespacedName) {
	if uid, ok := r.statics.gone(key); ok {
		r.startOrphanRemoval(ctx, uid)
		r.statics.forget(uid)
	}
}

// mirrorPod returns the mirror pod named key from the cache, nil while the
// cache has not synced or there is none.
func (r *PodReconciler) mirrorPod(ctx context.Context, key types.NamespacedName) (*corev1.Pod, error) {
	if !r.apiSynced() {
		return nil, fmt.Errorf("the API server has not answered yet")
	}
	mirror := &corev1.Pod{}
	if err := r.Client.Get(ctx, key, mirror); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading mirror pod %s: %w", key, err)
	}
	if !podutil.IsMirrorPod(mirror) || mirror.Spec.NodeName != r.NodeName {
		return nil, fmt.Errorf("pod %s exists and is not this node's mirror pod", key)
	}
	return mirror, nil
}

// syncMirrorPod creates the static pod's mirror pod when it is missing,
// and deletes it (to be created again) when a user deleted it or its
// hash is another static pod's, as the kubelet's syncPod does.
func (r *PodReconciler) syncMirrorPod(ctx context.Context, pod *corev1.Pod) error {
	mirror, err := r.mirrorPod(ctx, client.ObjectKeyFromObject(pod))
	if err != nil {
		return err
	}
	hash := pod.Annotations[podutil.ConfigHashAnnotation]
	if mirror != nil && (mirror.DeletionTimestamp != nil || mirror.Annotations[podutil.MirrorPodAnnotation] != hash) {
		klog.FromContext(ctx).Info("Deleting mirror pod that is outdated", "pod", klog.KObj(mirror), "deleting", mirror.DeletionTimestamp != nil)
		if err := r.deleteMirrorPod(ctx, mirror); err != nil {
			return err
		}
		// The next reconcile, which the deletion's watch event brings,
		// creates it anew.
		r.statics.setPending(pod.UID, true)
		return nil
	}
	if mirror == nil {
		if err := r.createMirrorPod(ctx, pod); err != nil {
			return err
		}
		// Its status is written by the next reconcile, which its creation
		// brings.
		r.statics.setPending(pod.UID, true)
		return nil
	}
	return nil
}

// createMirrorPod creates the API server's copy of a static pod, owned by
// the Node as NodeRestriction requires of a node's mirror pod.
func (r *PodReconciler) createMirrorPod(ctx context.Context, pod *corev1.Pod) error {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: r.NodeName}, node); err != nil {
		return fmt.Errorf("reading node %s to own mirror pod %s: %w", r.NodeName, klog.KObj(pod), err)
	}
	mirror := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pod.Name,
			Namespace:   pod.Namespace,
			Labels:      pod.Labels,
			Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID, Controller: ptr.To(true),
			}},
		},
		Spec: *pod.Spec.DeepCopy(),
	}
	for k, v := range pod.Annotations {
		mirror.Annotations[k] = v
	}
	mirror.Annotations[podutil.MirrorPodAnnotation] = pod.Annotations[podutil.ConfigHashAnnotation]
	if err := r.Client.Create(ctx, mirror); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating mirror pod %s: %w", klog.KObj(pod), err)
	}
	klog.FromContext(ctx).Info("Created mirror pod", "pod", klog.KObj(pod), "podUID", pod.UID)
	return nil
}

// deleteMirrorPod deletes a mirror pod at once, and only that one.
func (r *PodReconciler) deleteMirrorPod(ctx context.Context, mirror *corev1.Pod) error {
	uid := mirror.UID
	err := r.Client.Delete(ctx, mirror, client.GracePeriodSeconds(0), client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting mirror pod %s: %w", klog.KObj(mirror), err)
	}
	return nil
}

// reconcileOrphanedMirror handles a mirror pod whose static pod is gone:
// its runtime pods stop and it is deleted, once every source has been
// read (the kubelet's HandlePodCleanups).
func (r *PodReconciler) reconcileOrphanedMirror(ctx context.Context, mirror *corev1.Pod) (ctrl.Result, error) {
	r.stopGoneStaticPod(ctx, client.ObjectKeyFromObject(mirror))
	r.removeOrphans(ctx, mirror.Namespace, mirror.Name, "")
	klog.FromContext(ctx).Info("Deleting mirror pod of a static pod that is gone", "pod", klog.KObj(mirror))
	if err := r.deleteMirrorPod(ctx, mirror); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// patchMirrorStatus keeps a static pod's status and writes it to its
// mirror pod when the mirror is this static pod's and shows another.
func (r *PodReconciler) patchMirrorStatus(ctx context.Context, pod *corev1.Pod, merged corev1.PodStatus) (time.Time, bool, error) {
	r.statics.setStatus(pod.UID, merged)
	mirror, err := r.mirrorPod(ctx, client.ObjectKeyFromObject(pod))
	if err != nil || mirror == nil || mirror.DeletionTimestamp != nil ||
		mirror.Annotations[podutil.MirrorPodAnnotation] != pod.Annotations[podutil.ConfigHashAnnotation] {
		r.statics.setPending(pod.UID, true)
		return time.Time{}, false, nil
	}
	if podstatus.Equal(mirror.Status, merged) {
		r.statics.setPending(pod.UID, false)
		return r.Clock.Now(), true, nil
	}
	patch, err := statusPatch(mirror.UID, mirror.Status, merged)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("preparing status patch of mirror pod %s: %w", klog.KObj(mirror), err)
	}
	traced, answered := withAnswerTime(ctx, r.Clock)
	if err := r.Client.Status().Patch(traced, mirror, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		r.mirrorRetryLog(ctx, pod.UID).Info("Could not write the status of mirror pod; trying again", "pod", klog.KObj(mirror), "err", err.Error())
		r.statics.setPending(pod.UID, true)
		return time.Time{}, false, nil
	}
	r.statics.setPending(pod.UID, false)
	return answered(), true, nil
}

// NewController builds the pod controller without adding it to mgr, for
// the caller to start before the manager's caches have synced, as static
// pods need: its Pod watch starts with the cache and does not hold the
// controller until the cache has synced, and Reconcile waits for
// APISynced before it reads a Pod of the API server. The sources and
// predicate are SetupWithManager's.
func (r *PodReconciler) NewController(mgr ctrl.Manager, concurrency int) (controller.Controller, error) {
	c, err := controller.NewUnmanaged("pod", controller.Options{
		Reconciler:              r,
		MaxConcurrentReconciles: concurrency,
		SkipNameValidation:      mgr.GetControllerOptions().SkipNameValidation,
		Logger:                  mgr.GetLogger(),
	})
	if err != nil {
		return nil, err
	}
	pods := source.Kind(mgr.GetCache(), client.Object(&corev1.Pod{}), &handler.EnqueueRequestForObject{},
		predicate.Funcs{UpdateFunc: r.podUpdated})
	if err := c.Watch(unsyncedSource{pods}); err != nil {
		return nil, err
	}
	if err := c.Watch(source.Channel(r.Queue.events, &handler.EnqueueRequestForObject{})); err != nil {
		return nil, err
	}
	return c, nil
}

// unsyncedSource hides a source's WaitForSync, so that the controller
// starts its workers without waiting for the source's cache.
type unsyncedSource struct{ source.Source }
