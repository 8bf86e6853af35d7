package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/pod/podstart"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/resources/allocation"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// podRuntime is what the reconciler asks of the container runtime; the
// runtime package's Manager implements it.
type podRuntime interface {
	GetPodStatus(ctx context.Context, uid types.UID) (*kubecontainer.PodStatus, error)
	SyncPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, actions noderuntime.PodActions, env *noderuntime.PodEnv) noderuntime.SyncResult
	KillPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus, gracePeriodOverride *int64) error
	RemovePod(ctx context.Context, status *kubecontainer.PodStatus) error
	PruneContainers(ctx context.Context, status *kubecontainer.PodStatus) error
}

// podVolumes materialises and removes pods' volumes (package volume).
type podVolumes interface {
	PodDir(uid types.UID) string
	SetUpPod(ctx context.Context, pod *corev1.Pod) (map[string]string, time.Time, error)
	ExtraSupplementalGroups(pod *corev1.Pod) []int64
	// SELinuxRelabel are the volumes whose mounts the runtime relabels.
	SELinuxRelabel(pod *corev1.Pod) map[string]bool
	TearDownPod(ctx context.Context, uid types.UID) error
}

// podEnvSources reads what containers start with from the API server
// (package podenv).
type podEnvSources interface {
	Gather(ctx context.Context, pod *corev1.Pod, containers []*corev1.Container, env *kubecontainer.EnvSources) error
}

// podCgroups creates, resizes and removes pods' cgroups (package cgroups).
type podCgroups interface {
	PodCgroupParent(pod *corev1.Pod) string
	EnsurePod(pod *corev1.Pod) error
	RemovePod(uid types.UID) error
	noderuntime.PodCgroups
}

// retryPeriod is how soon a pod whose sync failed is tried again, as the
// kubelet's pod workers do.
const retryPeriod = 10 * time.Second

// networkNotReadyRetry is how soon a pod waiting for the network looks
// again, and networkNotReadyMessage its event's words, the kubelet's.
const (
	networkNotReadyRetry   = time.Second
	networkNotReadyMessage = "network is not ready"
)

// PodReconciler runs the pods bound to this node: for each Pod it reads the
// runtime's record, decides with ComputePodActions, acts through the
// runtime, and writes the resulting status.
type PodReconciler struct {
	Client   client.Client
	Runtime  podRuntime
	Volumes  podVolumes
	Cgroups  podCgroups
	Recorder record.EventRecorder
	Clock    clock.WithTicker
	// NodeName is this node; only Pods bound to it are reconciled.
	NodeName string
	// HostIPs returns the node's IPs, primary first, for pods' hostIPs.
	HostIPs func() []string
	// Prober runs the pods' probes; nil runs none.
	Prober podProber
	// EnvSources reads the ConfigMaps, Secrets, Services and pull secrets
	// containers start with; nil reads nothing.
	EnvSources podEnvSources
	// NetworkError, when set, says why the node's pod network is not
	// ready; pods not on the host's network wait for it. Default: ready.
	NetworkError func() error
	// Admit decides whether the node may run a pod it has made nothing
	// for yet (package admission); nil admits every pod.
	Admit AdmitFunc
	// Allocations keeps what the node allocated to each pod (package
	// allocation), and AdmitResize judges resizes; nil Allocations resizes
	// nothing in place, nil AdmitResize accepts every resize.
	Allocations *allocation.Store
	AdmitResize ResizeFunc
	// APIReader reads the Node past the cache when admission refuses a
	// pod for node affinity; nil leaves the cache's answer.
	APIReader client.Reader
	// SlowPodStartThreshold is how long a pod may take from its creation
	// to Ready before an event names its slowest step; zero: never.
	SlowPodStartThreshold time.Duration

	// UserNamespaces hands out the ID ranges of pods with hostUsers: false
	// (package userns); a pod's goes when its folder does. Nil: none.
	UserNamespaces userNamespaces

	// Eviction, when set, is the eviction manager's order to evict a pod,
	// if it gave one; nil evicts none.
	Eviction func(uid types.UID) (PodEviction, bool)

	// StaticPods are the node's static pods (package staticpod), run
	// before and without the API server; nil: none.
	StaticPods staticPodSource
	// APISynced reports whether the manager's cache has synced: until
	// then only static pods are run, and their mirror pods wait. Nil:
	// always.
	APISynced func() bool

	// Queue takes the pods to reconcile for what nodelet notices outside
	// the API server, and holds the PLEG's pod cache. Default: a new one.
	Queue *PodQueue

	cache      *pleg.Cache
	reasons    *reasonCache
	starts     *podStartTracker
	admissions admissions
	resizes    resizeConditions
	statics    staticPods
	// breakdowns explains each start this process traces, step by step.
	breakdowns *startBreakdowns
	// written is each pod's status as nodelet last wrote it.
	written writtenStatuses

	mu sync.Mutex
	// cleaning holds the runtime pods whose removal is under way.
	cleaning map[types.UID]bool
	// orphanRetries holds the orphans whose removal failed.
	orphanRetries map[types.UID]*orphanRetry
	// prepareFailures counts each pod's failed volume set-ups in a row.
	prepareFailures map[types.UID]int
	// kills holds the kill under way of each pod being deleted.
	kills map[types.UID]podKill
	// envFailures counts each pod's failed reads of what its containers
	// start with, in a row.
	envFailures map[types.UID]int
	// deleted are the pods deleted for good that the cache still holds.
	deleted deletedPods
}

// NewPodReconciler completes r with its private state and returns it.
func NewPodReconciler(r *PodReconciler) *PodReconciler {
	if r.Queue == nil {
		r.Queue = NewPodQueue(pleg.NewCache(), r.Clock)
	}
	r.cache = r.Queue.cache
	r.reasons = newReasonCache()
	r.starts = newPodStartTracker()
	r.breakdowns = newStartBreakdowns(r.Clock)
	r.cleaning = map[types.UID]bool{}
	r.orphanRetries = map[types.UID]*orphanRetry{}
	r.prepareFailures = map[types.UID]int{}
	r.kills = map[types.UID]podKill{}
	if r.Prober == nil {
		r.Prober = noProbes{}
	}
	r.envFailures = map[types.UID]int{}
	r.admissions.allocations = r.Allocations
	return r
}

// NewPLEG returns a PLEG that feeds this reconciler's queue and cache.
func (r *PodReconciler) NewPLEG(runtime pleg.Runtime, period time.Duration, log logr.Logger) *pleg.PLEG {
	return pleg.New(runtime, r.cache, r.Queue.events, period, r.Clock, log)
}

// SetupWithManager registers the reconciler: Pods from the field-selected
// cache (but the echoes of nodelet's own status writes), and the PLEG's
// (and the prober's) events. A Pod update that shortens the grace period
// of a deletion under way interrupts it, so that the shorter one applies
// at once.
func (r *PodReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("pod").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: r.podUpdated})).
		WatchesRawSource(source.Channel(r.Queue.events, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// podUpdated is the Pod update predicate. It notices a shortened grace
// period, and lets through every update but the echo of nodelet's own
// status write, which would cost a reconcile per write and find nothing
// to do.
func (r *PodReconciler) podUpdated(e event.UpdateEvent) bool {
	r.noticeGracePeriod(e)
	pod, ok := e.ObjectNew.(*corev1.Pod)
	old, _ := e.ObjectOld.(*corev1.Pod)
	return !ok || !r.written.echoes(old, pod)
}

// Reconcile brings one pod, named by namespace/name, to what its Pod asks.
// Runtime pods under that name with another UID are the remains of a Pod
// deleted or replaced, and are removed.
func (r *PodReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if result, done, err := r.reconcileBeforeAPI(ctx, req.NamespacedName); done {
		return result, err
	}
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting pod %s: %w", req, err)
		}
		pod = nil
	}
	if pod != nil && pod.Spec.NodeName != r.NodeName {
		pod = nil
	}
	if result, done, err := r.reconcileWithoutPod(ctx, pod); done {
		return result, err
	}
	var uid types.UID
	if pod != nil {
		uid, pod = pod.UID, r.written.current(pod)
	}
	r.stopGoneStaticPod(ctx, req.NamespacedName)
	r.removeOrphans(ctx, req.Namespace, req.Name, uid)
	if pod == nil {
		return ctrl.Result{}, nil
	}

	status, err := r.podStatus(ctx, pod.UID)
	if err != nil {
		return ctrl.Result{}, err
	}
	syncStart, operation := r.Clock.Now(), podWorkerOperation(pod, status)
	defer func() {
		kubeletmetrics.PodWorkerDuration.WithLabelValues(operation).Observe(r.Clock.Since(syncStart).Seconds())
	}()
	switch {
	case pod.DeletionTimestamp != nil:
		return r.syncTerminatingPod(ctx, pod, status)
	case podIsTerminal(pod, status):
		return r.syncTerminatedPod(ctx, pod, status)
	default:
		return r.syncPod(ctx, pod, status)
	}
}

// podStatus returns the pod's runtime record, from the PLEG's cache when it
// is newer than this reconciler's last action on the pod, else straight
// from the runtime.
func (r *PodReconciler) podStatus(ctx context.Context, uid types.UID) (*kubecontainer.PodStatus, error) {
	if status, ok := r.cache.GetFresh(uid); ok {
		return status, nil
	}
	return r.readPodStatus(ctx, uid)
}

// readPodStatus reads the runtime directly and refreshes the cache with it.
func (r *PodReconciler) readPodStatus(ctx context.Context, uid types.UID) (*kubecontainer.PodStatus, error) {
	readAt := r.Clock.Now()
	status, err := r.Runtime.GetPodStatus(ctx, uid)
	if err != nil {
		return nil, err
	}
	r.cache.Set(uid, status, readAt)
	return status, nil
}

// markSynced has the pod's next reconcile read no runtime record older
// than now, the end of an action on it.
func (r *PodReconciler) markSynced(uid types.UID) {
	r.cache.Invalidate(uid, r.Clock.Now())
}

func (r *PodReconciler) networkError() error {
	if r.NetworkError == nil {
		return nil
	}
	return r.NetworkError()
}

// syncPod runs a pod that should be running: prepare its cgroup and
// volumes, plan, act, then report.
func (r *PodReconciler) syncPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus) (ctrl.Result, error) {
	log := klog.FromContext(ctx)
	now := r.Clock.Now()
	var requeue requeueAfter

	ctx = r.breakdowns.traced(ctx, pod, len(status.Sandboxes)+len(status.Containers) > 0)
	if result, hold, err := r.admitPod(ctx, pod, status); hold || err != nil {
		return result, err
	}
	podstart.MarkStep(ctx, podstart.StepAdmitted, "")
	// From here on the pod is as the node runs it: its allocation, which
	// a resize it asks for changes only once accepted.
	pod, err := r.allocatedPod(ctx, pod, &requeue)
	if err != nil {
		return ctrl.Result{}, err
	}
	if failure := podstatus.DeadlineFailure(pod, now); failure != nil {
		return r.failPod(ctx, pod, status, failure)
	}
	if order, ok := r.eviction(pod.UID); ok {
		return r.evictPod(ctx, pod, status, order)
	}
	requeue.at(podstatus.DeadlineCheck(pod, now))
	// As the kubelet: while the network is not ready only pods on the
	// host's network run; the others wait, looking again shortly.
	if err := r.networkError(); err != nil && !pod.Spec.HostNetwork {
		r.Recorder.Eventf(pod, corev1.EventTypeWarning, "NetworkNotReady", "%s: %v", networkNotReadyMessage, err)
		if _, err := r.report(ctx, pod, status, false, false); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: networkNotReadyRetry}, nil
	}

	progress := r.reportProgressAfterDelay(ctx, pod, status)
	defer progress.stopInto(pod)
	env, refreshAt, prepErr := r.preparePod(ctx, pod)
	requeue.at(refreshAt)
	if prepErr != nil {
		progress.stopInto(pod)
		requeue.in(now, r.prepareRetryDelay(pod.UID))
		if _, err := r.report(ctx, pod, status, false, false); err != nil {
			return ctrl.Result{}, err
		}
		return requeue.result(now), nil
	}

	r.mu.Lock()
	delete(r.prepareFailures, pod.UID)
	r.mu.Unlock()
	podstart.MarkStep(ctx, podstart.StepVolumesReady, "")

	r.starts.seen(pod.UID, now)
	r.observeResize(pod, status)
	actions := noderuntime.ComputePodActions(pod, status, r.Prober.Results(pod.UID), now)
	for _, b := range actions.ContainersInBackOff {
		requeue.at(b.Until)
		r.Recorder.Eventf(containerRefByName(pod, b.Name), corev1.EventTypeWarning, "BackOff",
			"Back-off restarting failed container %s in pod %s", b.Name, formatPod(pod))
	}
	var result noderuntime.SyncResult
	// The sandbox's cgroup parent must exist before the sandbox; every
	// sync also keeps the pod counted in its QoS tier's CPU shares, which
	// a restarted nodelet learns again this way.
	if err := r.Cgroups.EnsurePod(pod); err != nil {
		return ctrl.Result{}, fmt.Errorf("creating cgroup of pod %s: %w", klog.KObj(pod), err)
	}
	if !actions.NoChange() {
		if r.gatherEnv(ctx, pod, actions, env) {
			requeue.in(now, r.quickRetryDelay(r.envFailures, pod.UID))
		} else {
			podstart.MarkStep(ctx, podstart.StepEnvReady, "")
		}
		log.V(1).Info("Syncing pod", "pod", klog.KObj(pod), "actions", actions)
		result = r.Runtime.SyncPod(ctx, pod, status, actions, env)
		if len(result.Started) > 0 {
			r.starts.started(pod.UID, result.ImagePullTime)
		}
		if startedSidecar(pod, result.Started) {
			// What comes after a sidecar may start as soon as it runs.
			requeue.in(now, 0)
		}
		if result.Err != nil {
			log.Info("Failed to sync pod", "pod", klog.KObj(pod), "err", result.Err.Error())
			requeue.in(now, retryPeriod)
		}
		r.resized(pod, actions, result, &requeue)
		for _, cerr := range result.ContainerErrors {
			// The next pull is due when its back-off ends.
			requeue.at(cerr.BackOffUntil)
		}
	}
	progress.stopInto(pod)
	r.reasons.update(pod, actions, result)
	status, err = r.report(ctx, pod, status, !actions.NoChange(), false)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.settle(pod, status, result)
	if err := r.Runtime.PruneContainers(ctx, status); err != nil {
		log.Error(err, "Failed to remove dead containers", "pod", klog.KObj(pod))
	}
	return requeue.result(r.Clock.Now()), nil
}

// syncTerminatedPod keeps a pod that ran to completion stopped: its
// containers stay for their logs, everything else goes.
func (r *PodReconciler) syncTerminatedPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus) (ctrl.Result, error) {
	stop := len(status.RunningContainers()) > 0 || len(status.IPs()) > 0 || hasReadySandbox(status)
	if stop {
		if err := r.Runtime.KillPod(ctx, pod, status, nil); err != nil {
			return ctrl.Result{}, fmt.Errorf("stopping finished pod %s: %w", klog.KObj(pod), err)
		}
	}
	if _, err := r.report(ctx, pod, status, stop, true); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.tearDownPodFolder(ctx, pod.UID); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing volumes of finished pod %s: %w", klog.KObj(pod), err)
	}
	if err := r.Cgroups.RemovePod(pod.UID); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing cgroup of finished pod %s: %w", klog.KObj(pod), err)
	}
	return ctrl.Result{}, nil
}

// forget drops what nodelet remembers of a pod it removed.
func (r *PodReconciler) forget(uid types.UID) {
	r.cache.Forget(uid, r.Clock.Now())
	r.mu.Lock()
	delete(r.prepareFailures, uid)
	delete(r.envFailures, uid)
	r.mu.Unlock()
	r.reasons.forget(uid)
	r.resizes.forget(uid)
	r.forgetAllocation(uid)
	r.starts.forget(uid)
	r.breakdowns.forget(uid)
	r.written.forget(uid)
	r.statics.forget(uid)
	r.Prober.RemovePod(uid)
}

// podIsTerminal reports whether a pod is done: its phase in the API is
// terminal, or its runtime state says it ran to completion under its
// restart policy.
func podIsTerminal(pod *corev1.Pod, status *kubecontainer.PodStatus) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	switch podstatus.Phase(pod, status) {
	case corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return false
}

func hasReadySandbox(status *kubecontainer.PodStatus) bool {
	for _, sb := range status.Sandboxes {
		if sb.State == kubecontainer.SandboxReady {
			return true
		}
	}
	return false
}

// containerRefByName points an event at one container of the pod.
func containerRefByName(pod *corev1.Pod, name string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
		UID: pod.UID, ResourceVersion: pod.ResourceVersion,
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			ref.FieldPath = fmt.Sprintf("spec.initContainers{%s}", name)
			return ref
		}
	}
	ref.FieldPath = fmt.Sprintf("spec.containers{%s}", name)
	return ref
}
