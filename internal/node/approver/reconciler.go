package approver

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// The permissions of the approver's ServiceAccount: read CSRs, approve
// those of the kubelet client and serving signers, read (get, no more) the
// pods of nodelet's namespace that tokens are bound to, and hold its
// leader election lease, read (get) nodelet's DaemonSet, whose UID the
// pod's controller reference must carry, and read (get) the companion
// Node a serving certificate is asked for, whose addresses it may name.
//
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client-kubelet;kubernetes.io/kubelet-serving,verbs=approve
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get,namespace=system
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get,namespace=system
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=system

// ApprovedReason is the reason of the approval condition.
const ApprovedReason = "NodeletAutoApproved"

// A request that may pass later (Decision.Retry) is judged again every
// RetryPeriod while it is younger than RetryWindow; after that, the
// requester's own retry (client-go's certificate manager makes a new
// request when one waits 15 minutes) brings it back.
const (
	RetryPeriod = 10 * time.Second
	RetryWindow = 15 * time.Minute
)

// Reconciler approves the CSRs Decide approves and leaves the others
// pending.
type Reconciler struct {
	Client client.Client
	// APIReader reads the pod a requester's token is bound to, and
	// nodelet's DaemonSet, straight from the API server: the approver may
	// get them, not list or watch them, so it keeps no cache of them.
	APIReader client.Reader
	Policy    Policy
	// Serving judges the kubelet serving signer's CSRs; nil leaves them
	// alone.
	Serving *ServingPolicy
	Log     logr.Logger
}

// judges tells whether the approver judges a signer's requests.
func (r *Reconciler) judges(signer string) bool {
	return signer == SignerName || (r.Serving != nil && signer == ServingSignerName)
}

// SetupWithManager watches the CSRs of the kubelet client signer (and the
// serving signer with Serving) only: the others are none of the
// approver's business.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ofSigner := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		return ok && r.judges(csr.Spec.SignerName)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("nodelet-approver").
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(ofSigner)).
		Complete(r)
}

// Reconcile judges one CSR that has no decision yet.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if decided(csr) || !r.judges(csr.Spec.SignerName) {
		return ctrl.Result{}, nil
	}
	decision, err := r.decide(ctx, csr)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("certificate signing request %s: %w", csr.Name, err)
	}
	log := r.Log.WithValues("csr", csr.Name, "requester", csr.Spec.Username, "signer", csr.Spec.SignerName)
	if !decision.Approve {
		log.Info("Left the certificate signing request pending", "reason", decision.Reason)
		// Nothing the approver watches changes when a Node registers or
		// reports its addresses: look again, for a while.
		if decision.Retry && time.Since(csr.CreationTimestamp.Time) < RetryWindow {
			return ctrl.Result{RequeueAfter: RetryPeriod}, nil
		}
		return ctrl.Result{}, nil
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type:           certificatesv1.CertificateApproved,
		Status:         corev1.ConditionTrue,
		Reason:         ApprovedReason,
		Message:        "Approved by nodelet-approver: " + decision.Reason,
		LastUpdateTime: metav1.Now(),
	})
	if err := r.Client.SubResource("approval").Update(ctx, csr); err != nil {
		// A conflict too: judged again, with back-off, from the version
		// that changed meanwhile.
		return ctrl.Result{}, fmt.Errorf("approving certificate signing request %s: %w", csr.Name, err)
	}
	log.Info("Approved the certificate signing request", "reason", decision.Reason)
	return ctrl.Result{}, nil
}

// decide reads what a CSR's decision needs (the bound pod and the
// DaemonSet for a client certificate, the requester's Node for a serving
// one) and decides.
func (r *Reconciler) decide(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (Decision, error) {
	if csr.Spec.SignerName == ServingSignerName {
		request := ServingRequest{
			SignerName:        csr.Spec.SignerName,
			Username:          csr.Spec.Username,
			Groups:            csr.Spec.Groups,
			Usages:            csr.Spec.Usages,
			ExpirationSeconds: csr.Spec.ExpirationSeconds,
			PEM:               csr.Spec.Request,
		}
		node, err := r.requesterNode(ctx, request)
		if err != nil {
			return Decision{}, err
		}
		request.Node = node
		return DecideServing(*r.Serving, request), nil
	}
	extra := map[string][]string{}
	for key, values := range csr.Spec.Extra {
		extra[key] = values
	}
	request := Request{
		SignerName:        csr.Spec.SignerName,
		Username:          csr.Spec.Username,
		Extra:             extra,
		Usages:            csr.Spec.Usages,
		ExpirationSeconds: csr.Spec.ExpirationSeconds,
		PEM:               csr.Spec.Request,
	}
	pod, err := r.boundPod(ctx, request)
	if err != nil {
		return Decision{}, err
	}
	request.Pod = pod
	if pod != nil {
		if request.DaemonSetUID, err = r.daemonSetUID(ctx); err != nil {
			return Decision{}, err
		}
	}
	return Decide(r.Policy, request), nil
}

// requesterNode reads the companion Node a serving CSR's requester is:
// nil when there is none, or when the requester is no companion's user
// (no other Node is read).
func (r *Reconciler) requesterNode(ctx context.Context, request ServingRequest) (*corev1.Node, error) {
	name, ok := CompanionNodeName(request.Username, r.Serving.NodeNameSuffix)
	if !ok {
		return nil, nil
	}
	node := &corev1.Node{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, node)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading node %s, the requester: %w", name, err)
	}
	return node, nil
}

// boundPod reads the pod the requester's token is bound to, in nodelet's
// namespace: nil when there is none, or when the request is not the
// DaemonSet ServiceAccount's (no pod of other requesters is read).
func (r *Reconciler) boundPod(ctx context.Context, request Request) (*corev1.Pod, error) {
	name, ok := BoundPodName(request.Extra)
	if !ok || request.SignerName != SignerName || request.Username != r.Policy.Requester {
		return nil, nil
	}
	pod := &corev1.Pod{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Policy.DaemonSetNamespace, Name: name}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading pod %s/%s, to which the requester's token is bound: %w", r.Policy.DaemonSetNamespace, name, err)
	}
	return pod, nil
}

// daemonSetUID reads nodelet's DaemonSet's UID, empty when it does not
// exist.
func (r *Reconciler) daemonSetUID(ctx context.Context) (types.UID, error) {
	daemonSet := &appsv1.DaemonSet{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Policy.DaemonSetNamespace, Name: r.Policy.DaemonSetName}, daemonSet)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading DaemonSet %s/%s: %w", r.Policy.DaemonSetNamespace, r.Policy.DaemonSetName, err)
	}
	return daemonSet.UID, nil
}

// decided: approved, denied, failed or issued already.
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	if len(csr.Status.Certificate) > 0 {
		return true
	}
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return true
		}
	}
	return false
}
