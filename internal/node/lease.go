package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaseOptions configure the LeaseRenewer.
type LeaseOptions struct {
	// NodeName is the Node the Lease stands for. Required.
	NodeName string
	// Namespace holds the node leases. Default: kube-node-lease.
	Namespace string
	// DurationSeconds is the Lease's leaseDurationSeconds: how long the node
	// lifecycle controller waits for a renewal. Default: 40.
	DurationSeconds int32
	// RenewInterval is how often the Lease is renewed; it also bounds each
	// renewal's API calls. Default: 10s.
	RenewInterval time.Duration
	// Clock is the time source. Default: the real clock.
	Clock clock.WithTicker
	// Log is the loop's logger. Default: the logger of Start's context.
	Log logr.Logger
}

// LeaseRenewer keeps the node's Lease in kube-node-lease renewed: the
// heartbeat the node lifecycle controller reads. It runs in its own
// goroutine with its own calls, so pod work never delays it. It is a
// manager.Runnable.
type LeaseRenewer struct {
	writer client.Writer
	reader client.Reader
	opts   LeaseOptions

	// latest is the Lease as last written; renewing from it saves a read.
	latest *coordinationv1.Lease
}

// NewLeaseRenewer returns a renewer that writes with writer and reads with
// reader, which must not be a cached client: a cache would watch every
// Lease of the cluster.
func NewLeaseRenewer(writer client.Writer, reader client.Reader, opts LeaseOptions) (*LeaseRenewer, error) {
	if opts.NodeName == "" {
		return nil, errors.New("lease renewer: no node name")
	}
	if opts.Namespace == "" {
		opts.Namespace = corev1.NamespaceNodeLease
	}
	if opts.DurationSeconds <= 0 {
		opts.DurationSeconds = defaultLeaseDuration
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = defaultLeaseRenewInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &LeaseRenewer{writer: writer, reader: reader, opts: opts}, nil
}

// NeedLeaderElection is false: every node renews its own Lease.
func (r *LeaseRenewer) NeedLeaderElection() bool { return false }

// Start renews the Lease every RenewInterval until ctx ends.
func (r *LeaseRenewer) Start(ctx context.Context) error {
	log := r.opts.Log
	if log.GetSink() == nil {
		log = klog.FromContext(ctx)
	}
	log = log.WithValues("lease", klog.KRef(r.opts.Namespace, r.opts.NodeName))
	ticker := r.opts.Clock.NewTicker(r.opts.RenewInterval)
	defer ticker.Stop()
	for {
		if err := r.renew(ctx); err != nil {
			log.Error(err, "Failed to renew the node's lease")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// renew writes a new renewTime, from the Lease last written when there is
// one, else from the API server's (created when missing). A conflict means
// someone else wrote it: read it again and retry at once.
func (r *LeaseRenewer) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RenewInterval)
	defer cancel()
	key := client.ObjectKey{Namespace: r.opts.Namespace, Name: r.opts.NodeName}
	var err error
	for range maxLeaseUpdateAttempts {
		lease := r.latest
		r.latest = nil
		if lease == nil {
			lease = &coordinationv1.Lease{}
			err = r.reader.Get(ctx, key, lease)
			if apierrors.IsNotFound(err) {
				lease = renewedLease(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
					r.opts.NodeName, r.nodeUID(ctx), r.opts.DurationSeconds, r.opts.Clock.Now())
				err = r.writer.Create(ctx, lease)
				if err == nil {
					r.latest = lease
					return nil
				}
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				return fmt.Errorf("creating lease %s: %w", key, err)
			}
			if err != nil {
				return fmt.Errorf("reading lease %s: %w", key, err)
			}
		}

		var uid types.UID
		if len(lease.OwnerReferences) == 0 {
			uid = r.nodeUID(ctx)
		}
		lease = renewedLease(lease, r.opts.NodeName, uid, r.opts.DurationSeconds, r.opts.Clock.Now())
		err = r.writer.Update(ctx, lease)
		if err == nil {
			r.latest = lease
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("updating lease %s: %w", key, err)
		}
	}
	return fmt.Errorf("renewing lease %s: %w", key, err)
}

// nodeUID is the Node's UID for the Lease's owner reference, or empty while
// the Node is not registered: the Lease is then written without one, and
// gets it on a later renewal.
func (r *LeaseRenewer) nodeUID(ctx context.Context) types.UID {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.reader.Get(ctx, client.ObjectKey{Name: r.opts.NodeName}, node); err != nil {
		return ""
	}
	return node.UID
}

// renewedLease is lease held by the node and renewed at now. An owner
// reference to the Node (nodeUID, when known) is set when the Lease has
// none, as the kubelet does: deleting the Node then deletes its Lease.
func renewedLease(lease *coordinationv1.Lease, nodeName string, nodeUID types.UID, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	lease = lease.DeepCopy()
	lease.Spec.HolderIdentity = ptr.To(nodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(durationSeconds)
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now))
	if len(lease.OwnerReferences) == 0 && nodeUID != "" {
		lease.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: corev1.SchemeGroupVersion.String(),
			Kind:       "Node",
			Name:       nodeName,
			UID:        nodeUID,
		}}
	}
	return lease
}
