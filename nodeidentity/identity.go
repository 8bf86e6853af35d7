// Package nodeidentity gives a nodelet run as a DaemonSet pod its node's
// identity: a client certificate for system:node:<node> in system:nodes,
// requested through a CertificateSigningRequest with the
// kubernetes.io/kube-apiserver-client-kubelet signer, kept in a folder,
// renewed before it expires, and the API client built from it alone. The
// Node authorizer and NodeRestriction then confine nodelet as they confine
// a kubelet.
//
// Every request, renewals included, is made with the bootstrap
// credentials (the pod's bound service account token, whose user info
// carries the pod's name and UID and the name of the node it runs on),
// for a lifetime of CertificateLifetimeSeconds, never with the
// certificate being renewed: the approver (package approver) then has one
// kind of request to judge, and a nodelet whose certificate expired while
// it was down gets a new one by itself.
package nodeidentity

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

const (
	// SignerName is the signer node client certificates are requested
	// from, as the kubelet's.
	SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
	// NodesGroup is the organisation of a node's certificate, the group
	// the Node authorizer confines.
	NodesGroup = "system:nodes"
	// CertificatePrefix names the files in the certificate folder:
	// nodelet-client-current.pem (key and certificate) links to the newest
	// nodelet-client-<time>.pem, as the kubelet's kubelet-client-*.
	CertificatePrefix = "nodelet-client"
	// CertificateLifetimeSeconds is the lifetime requested
	// (spec.expirationSeconds): a day. The approver approves no request
	// without one, nor one longer than it allows (this by default): a
	// certificate cannot be revoked, so it should not outlive by much the
	// pod it was granted to. kube-controller-manager's signer honours it,
	// shortened to its --cluster-signing-duration; renewal at 70 to 90%
	// of it makes a request every 17 to 22 hours per node.
	CertificateLifetimeSeconds = 24 * 60 * 60
)

// Username is the user a node's client certificate names.
func Username(nodeName string) string { return "system:node:" + nodeName }

// CertificateRequest is what a node's client certificate is requested
// for: the node's user in the nodes' group, and nothing else (no
// addresses, no names), as the signer and the approver require.
func CertificateRequest(nodeName string) *x509.CertificateRequest {
	return &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: Username(nodeName), Organization: []string{NodesGroup}},
	}
}

// Options say which node's certificate to keep, where, and with which
// credentials to request it.
type Options struct {
	// NodeName is the node the certificate names.
	NodeName string
	// Dir holds the key and certificate (CertificatePrefix); a valid one
	// found there at start is used without a new request.
	Dir string
	// Bootstrap reaches the API server with the credentials that request
	// certificates: in a DaemonSet pod, its service account token (read
	// from its file at each request, as the kubelet rotates it).
	Bootstrap *rest.Config
	Log       logr.Logger
}

// Identity keeps the node's client certificate: the one in use, the next
// one requested at 70 to 90% of its life (client-go's certificate manager,
// as the kubelet's client certificate).
type Identity struct {
	// username is the subject the certificate must name: one kept in the
	// folder from before a change of --node-name is not this node's.
	username  string
	manager   certificate.Manager
	bootstrap *rest.Config
	log       logr.Logger
	// rotationCheck is how often the API client looks for a renewed
	// certificate to close its connections made with the old one.
	rotationCheck time.Duration
}

// Start begins keeping the node's certificate: it loads the one in
// opts.Dir, and requests one when there is none, it is expired or names
// another node; then renews it before it expires, until ctx ends.
func Start(ctx context.Context, opts Options) (*Identity, error) {
	if opts.NodeName == "" || opts.Dir == "" || opts.Bootstrap == nil {
		return nil, errors.New("node identity: the node name, the certificate folder and the bootstrap credentials are required")
	}
	client, err := kubernetes.NewForConfig(opts.Bootstrap)
	if err != nil {
		return nil, fmt.Errorf("building the bootstrap API client: %w", err)
	}
	logger := klog.Logger(opts.Log)
	store, err := certificate.NewFileStoreWithLogger(logger, CertificatePrefix, opts.Dir, opts.Dir, "", "")
	if err != nil {
		return nil, fmt.Errorf("opening the node certificate store in %s: %w", opts.Dir, err)
	}
	managerCtx := klog.NewContext(ctx, logger)
	manager, err := certificate.NewManager(&certificate.Config{
		// Always the bootstrap credentials, not the current certificate:
		// see the package comment.
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		GetTemplate: func() *x509.CertificateRequest {
			return CertificateRequest(opts.NodeName)
		},
		SignerName:                   SignerName,
		RequestedCertificateLifetime: ptr.To(CertificateLifetimeSeconds * time.Second),
		GetUsages:                    certificate.DefaultKubeletClientGetUsages,
		CertificateStore:             store,
		Name:                         "nodelet client",
		Ctx:                          &managerCtx,
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: starting the client certificate manager: %w", opts.NodeName, err)
	}
	manager.Start()
	go func() {
		<-ctx.Done()
		manager.Stop()
	}()
	return &Identity{manager: manager, username: Username(opts.NodeName), bootstrap: opts.Bootstrap, log: opts.Log, rotationCheck: 10 * time.Second}, nil
}

// Current is the certificate in use; nil before the first one is issued
// and once it has expired.
func (i *Identity) Current() *tls.Certificate { return i.manager.Current() }

// Wait blocks until a valid certificate of this node is there (one of
// another node name, kept from before, is being replaced), telling every minute
// that it waits (for the approver, most likely), or until ctx ends.
func (i *Identity) Wait(ctx context.Context) error {
	started := time.Now()
	lastTold := started
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		if cert := i.Current(); cert != nil && cert.Leaf.Subject.CommonName == i.username {
			i.log.Info("Using the node client certificate", "subject", cert.Leaf.Subject.String(),
				"notAfter", cert.Leaf.NotAfter, "waited", time.Since(started).Round(time.Second))
			return true, nil
		}
		if time.Since(lastTold) >= time.Minute {
			lastTold = time.Now()
			i.log.Info("Waiting for the node client certificate: is its certificate signing request approved?",
				"signer", SignerName, "waited", time.Since(started).Round(time.Second))
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the node client certificate: %w", err)
	}
	return nil
}
