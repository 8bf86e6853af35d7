package controllers

import (
	"context"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/pod/podutil"
	"github.com/nodelet/nodelet/internal/resources/admission"
	"github.com/nodelet/nodelet/internal/resources/allocation"
)

// AdmitFunc decides whether the node may run pod beside the pods admitted
// before it (package admission's Admitter.Admit).
type AdmitFunc func(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) admission.Result

// admissions is the node's record of which pods were admitted and which
// refused, the kubelet's "active pods" that a new pod is judged beside.
// Reconciles run concurrently, so judging is serialised here, and a pod is
// judged only after every pod of the node created before it: a burst that
// overflows the node admits exactly its first pods that fit, whatever the
// order its reconciles run in.
type admissions struct {
	mu sync.Mutex
	// judged holds each judged pod's answer; a pod gone from the cache
	// leaves it at the next judgement.
	judged map[types.UID]admission.Result
	// restored is set once the pods the node already runs are recorded.
	restored bool
	// preemptions holds the pods stopped to make room for critical pods,
	// until they leave the cache.
	preemptions map[types.UID]preemption
	// allocations are what the admitted pods were allocated, which the
	// pods judged after them are judged beside; nil: their specs.
	allocations *allocation.Store
}

// allocatedOf is an admitted pod as the node runs it: with its
// allocation's resources, which differ from its spec's while a resize is
// pending.
func (a *admissions) allocatedOf(pod *corev1.Pod) *corev1.Pod {
	if a.allocations == nil {
		return pod
	}
	alloc, ok := a.allocations.Get(pod.UID)
	if !ok {
		return pod
	}
	allocated, _ := allocation.Apply(pod, alloc)
	return allocated
}

// admissionReader is what judging reads: the node's pods and Node from the
// cache, and whether the runtime holds something of a pod.
type admissionReader struct {
	pods         func(ctx context.Context) ([]*corev1.Pod, error)
	node         func(ctx context.Context) (*corev1.Node, error)
	runtimeState func(ctx context.Context, uid types.UID) (bool, error)
}

// judge returns the answer for pod, judging first, in creation order,
// every pod of the node created before it that has no answer yet.
//
// After a restart nothing is recorded. The kubelet then admits every pod
// again, in creation order; nodelet does the same with one difference: a
// pod that was admitted before (the runtime holds something of it, or its
// status shows a container that ran) is recorded as admitted first, all at
// once, and never judged again, so that a running pod is never refused and
// the pods judged after the restart count it whatever its age. A pod that
// was admitted but had nothing made yet when nodelet stopped cannot be told
// from a new one: it is judged again, in its place in creation order,
// beside the running pods, as the kubelet judges it again.
//
// A critical pod admitted by preempting others comes with the orders to stop
// them, made by this judgement, for the caller to announce.
func (a *admissions) judge(ctx context.Context, pod *corev1.Pod, read admissionReader, admit AdmitFunc) (admission.Result, []preemption, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.judged == nil {
		a.judged = map[types.UID]admission.Result{}
	}
	if r, ok := a.judged[pod.UID]; ok {
		return r, nil, nil
	}
	all, err := read.pods(ctx)
	if err != nil {
		return admission.Result{}, nil, err
	}
	present := make(map[types.UID]bool, len(all))
	var active []*corev1.Pod
	for _, p := range all {
		present[p.UID] = true
		if !podPhaseTerminal(p) {
			active = append(active, p)
		}
	}
	if !present[pod.UID] && !podPhaseTerminal(pod) {
		active = append(active, pod)
	}
	for uid := range a.judged {
		if !present[uid] && uid != pod.UID {
			delete(a.judged, uid)
			delete(a.preemptions, uid)
		}
	}
	sort.Slice(active, func(i, j int) bool { return admission.CreatedBefore(active[i], active[j]) })

	if !a.restored {
		for _, p := range active {
			if ran, err := wasAdmitted(ctx, p, read); err != nil {
				return admission.Result{}, nil, err
			} else if ran {
				a.judged[p.UID] = admission.Result{Admit: true}
			}
		}
		a.restored = true
	}
	var node *corev1.Node
	var preempted []preemption
	for _, p := range active {
		if _, ok := a.judged[p.UID]; ok {
			continue
		}
		if p.UID != pod.UID && !admission.CreatedBefore(p, pod) {
			break
		}
		if p.DeletionTimestamp != nil {
			// As the kubelet: a pod whose termination is asked for is not
			// admitted, and holds nothing.
			continue
		}
		if ran, err := wasAdmitted(ctx, p, read); err != nil {
			return admission.Result{}, nil, err
		} else if ran {
			a.judged[p.UID] = admission.Result{Admit: true}
			continue
		}
		if node == nil {
			if node, err = read.node(ctx); err != nil {
				return admission.Result{}, nil, err
			}
		}
		result := admit(p, node, a.admittedBeside(p, active))
		preempted = append(preempted, a.recordPreemptions(p, result)...)
		result.Preempt = nil
		a.judged[p.UID] = result
		if p.UID == pod.UID {
			break
		}
	}
	r, ok := a.judged[pod.UID]
	if !ok {
		// Terminal, or missing from the list: nothing to judge.
		return admission.Result{Admit: true}, preempted, nil
	}
	return r, preempted, nil
}

// admittedBeside are the active pods admitted so far, other than pod.
func (a *admissions) admittedBeside(pod *corev1.Pod, active []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range active {
		if r, ok := a.judged[p.UID]; ok && r.Admit && p.UID != pod.UID {
			out = append(out, a.allocatedOf(p))
		}
	}
	return out
}

func wasAdmitted(ctx context.Context, pod *corev1.Pod, read admissionReader) (bool, error) {
	if admission.WasAdmitted(pod, false) {
		return true, nil
	}
	held, err := read.runtimeState(ctx, pod.UID)
	if err != nil {
		return false, fmt.Errorf("reading the runtime's record of pod %s: %w", klog.KObj(pod), err)
	}
	return held, nil
}

// podPhaseTerminal: a pod that ended holds nothing of the node any more.
func podPhaseTerminal(pod *corev1.Pod) bool {
	return podstatus.IsTerminalPhase(pod.Status.Phase)
}

// admissionReader reads for judging: the node's pods and its Node from the
// manager's cache, runtime records through the PLEG's cache or CRI.
func (r *PodReconciler) admissionReader() admissionReader {
	return admissionReader{
		pods: func(ctx context.Context) ([]*corev1.Pod, error) {
			// Every admission reads every pod of the node, so a burst of n
			// pods deep-copied the cache n² times over. Judging only reads
			// (allocation.Apply copies before it changes anything), so it
			// reads the cache's objects as they are.
			list := &corev1.PodList{}
			if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
				return nil, fmt.Errorf("listing the node's pods: %w", err)
			}
			var pods []*corev1.Pod
			for i := range list.Items {
				// A mirror pod stands for its static pod, listed below.
				if list.Items[i].Spec.NodeName == r.NodeName && !podutil.IsMirrorPod(&list.Items[i]) {
					pods = append(pods, &list.Items[i])
				}
			}
			if r.StaticPods != nil {
				pods = append(pods, r.StaticPods.List()...)
			}
			return pods, nil
		},
		node: func(ctx context.Context) (*corev1.Node, error) {
			return r.readNode(ctx, r.Client)
		},
		runtimeState: func(ctx context.Context, uid types.UID) (bool, error) {
			status, err := r.podStatus(ctx, uid)
			if err != nil {
				return false, err
			}
			return len(status.Sandboxes)+len(status.Containers) > 0, nil
		},
	}
}

func (r *PodReconciler) readNode(ctx context.Context, reader client.Reader) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := reader.Get(ctx, types.NamespacedName{Name: r.NodeName}, node); err != nil {
		return nil, fmt.Errorf("reading node %s for pod admission: %w", r.NodeName, err)
	}
	return node, nil
}

// admitPod judges a pod the node has made nothing for yet, once, before
// its cgroup, volumes or sandbox exist. A refused pod gets the kubelet's
// event and ends Failed with the reason and message in its status; the
// status update brings it back as terminal, with nothing to tear down. A
// critical pod admitted by preempting others waits for them to stop. hold
// says the pod may not go on yet, and result is then the reconcile's.
func (r *PodReconciler) admitPod(ctx context.Context, pod *corev1.Pod, status *kubecontainer.PodStatus) (result ctrl.Result, hold bool, err error) {
	if r.Admit == nil {
		return ctrl.Result{}, false, nil
	}
	if admission.WasAdmitted(pod, len(status.Sandboxes)+len(status.Containers) > 0) ||
		(podutil.IsStaticPod(pod) && !r.apiSynced()) {
		// A static pod found before the API server answers has no Node
		// and no other pods to be judged beside: it is admitted, as the
		// kubelet's critical pods are; the pods judged after count it.
		r.admissions.recordAdmitted(pod.UID)
		return ctrl.Result{}, false, nil
	}
	admit := func(p *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) admission.Result {
		return r.admitWithFreshNode(ctx, p, node, admitted)
	}
	answer, preempted, err := r.admissions.judge(ctx, pod, r.admissionReader(), admit)
	r.announcePreemptions(ctx, preempted)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if answer.Admit {
		wait, err := r.waitingForPreemption(ctx, pod)
		if err != nil {
			return ctrl.Result{}, true, err
		}
		return ctrl.Result{RequeueAfter: preemptionWait}, wait, nil
	}
	klog.FromContext(ctx).Info("Rejected pod", "pod", klog.KObj(pod), "reason", answer.Reason, "message", answer.Message)
	r.Recorder.Eventf(pod, corev1.EventTypeWarning, answer.Reason, "%s", answer.Message)
	failure := &podstatus.Failure{Reason: answer.Reason, Message: answer.StatusMessage()}
	return ctrl.Result{}, true, r.writeStatusFailing(ctx, pod, status, true, failure)
}

// admitWithFreshNode is r.Admit, asked again with the Node read from the
// API server when node affinity was the answer: as the kubelet, a label
// just added to the Node may not have reached the cache yet.
func (r *PodReconciler) admitWithFreshNode(ctx context.Context, pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) admission.Result {
	result := r.Admit(pod, node, admitted)
	if result.Admit || result.Reason != admission.ReasonNodeAffinity || r.APIReader == nil {
		return result
	}
	fresh, err := r.readNode(ctx, r.APIReader)
	if err != nil {
		return result
	}
	return r.Admit(pod, fresh, admitted)
}

// recordAdmitted notes a pod found already running as admitted, so that
// the pods judged after it count it.
func (a *admissions) recordAdmitted(uid types.UID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.judged == nil {
		a.judged = map[types.UID]admission.Result{}
	}
	if _, ok := a.judged[uid]; !ok {
		a.judged[uid] = admission.Result{Admit: true}
	}
}
