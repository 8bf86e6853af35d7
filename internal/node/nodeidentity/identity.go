// Package nodeidentity gives nodelet its node's identity: a client
// certificate for system:node:<node> in system:nodes, requested through a
// CertificateSigningRequest with the kubernetes.io/kube-apiserver-client-kubelet
// signer, kept in a folder, renewed before it expires, and the API client
// built from it alone. The Node authorizer and NodeRestriction then confine
// nodelet as they confine a kubelet.
//
// Two paths share it, and differ in the credentials requests are made with:
//
//   - a DaemonSet pod (--node-identity=csr) makes every request, renewals
//     included, with its bound service account token (whose user info
//     carries the pod's name and UID and its node's name), for a lifetime
//     of CertificateLifetimeSeconds, never with the certificate being
//     renewed: the approver (package approver) then has one kind of
//     request to judge, and a nodelet whose certificate expired while it
//     was down gets a new one by itself;
//   - a host (--bootstrap-kubeconfig, the kubelet's TLS bootstrap, see
//     host.go) makes its first request with a bootstrap token and renews
//     with the node's own certificate, as the kubelet does: the
//     controller-manager's approver approves the first for the
//     bootstrappers' group and the renewals for the node itself, and the
//     token may have expired long before. The bootstrap credentials are
//     used again only when the node's certificate has expired.
package nodeidentity

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/node/nodeuser"
)

const (
	// SignerName is the signer node client certificates are requested
	// from, as the kubelet's.
	SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
	// CertificatePrefix names the files in the certificate folder:
	// nodelet-client-current.pem (key and certificate) links to the newest
	// nodelet-client-<time>.pem, as the kubelet's kubelet-client-*.
	CertificatePrefix = "nodelet-client"
	// CertificateLifetimeSeconds is the lifetime a DaemonSet pod requests
	// (spec.expirationSeconds): a day. The approver approves no request
	// without one, nor one longer than it allows (this by default): a
	// certificate cannot be revoked, so it should not outlive by much the
	// pod it was granted to. kube-controller-manager's signer honours it,
	// shortened to its --cluster-signing-duration; renewal at 70 to 90%
	// of it makes a request every 17 to 22 hours per node.
	CertificateLifetimeSeconds = 24 * 60 * 60
)

// CertificateRequest is what a node's client certificate is requested
// for: the node's user in the nodes' group, and nothing else (no
// addresses, no names), as the signer and the approver require.
func CertificateRequest(nodeName string) *x509.CertificateRequest {
	return &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: nodeuser.Name(nodeName), Organization: []string{nodeuser.Group}},
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
	// Server is the API server and the CA that checks it; its
	// credentials are not used. Default: Bootstrap's.
	Server *rest.Config
	// Bootstrap reaches the API server with the credentials that request
	// certificates: in a DaemonSet pod, its service account token (read
	// from its file at each request, as the kubelet rotates it); on a
	// host, the bootstrap token. Nil on a host whose node certificate is
	// valid and whose bootstrap kubeconfig is gone: once that certificate
	// expires, nothing can request the next.
	Bootstrap *rest.Config
	// Host is the kubelet's TLS bootstrap (see host.go): Bootstrap
	// requests a certificate only while the node has none valid, the
	// node's certificate requests the next one, and the lifetime is the
	// signer's (its --cluster-signing-duration), as the kubelet's.
	// Otherwise (a DaemonSet pod) Bootstrap makes every request, for
	// CertificateLifetimeSeconds.
	Host bool
	// InitialCertificatePEM and InitialKeyPEM are a certificate of the
	// node to use when Dir holds none (a --kubeconfig's own): stored in
	// Dir, and replaced at once, as the kubelet replaces one it did not
	// request.
	InitialCertificatePEM, InitialKeyPEM []byte
	Log                                  logr.Logger
}

// Identity keeps the node's client certificate: the one in use, the next
// one requested at 70 to 90% of its life (client-go's certificate manager,
// as the kubelet's client certificate).
type Identity struct {
	// username is the subject the certificate must name: one kept in the
	// folder from before a change of --node-name is not this node's.
	username string
	manager  certificate.Manager
	// server is the API server the node's client reaches, and its CA.
	server *rest.Config
	log    logr.Logger
	// rotationCheck is how often the API client looks for a renewed
	// certificate to close its connections made with the old one.
	rotationCheck time.Duration
}

// Start begins keeping the node's certificate: it loads the one in
// opts.Dir, and requests one when there is none, it is expired or names
// another node; then renews it before it expires, until ctx ends.
func Start(ctx context.Context, opts Options) (*Identity, error) {
	if opts.Server == nil {
		opts.Server = opts.Bootstrap
	}
	if opts.NodeName == "" || opts.Dir == "" || opts.Server == nil {
		return nil, errors.New("node identity: the node name, the certificate folder and the API server (or the bootstrap credentials) are required")
	}
	credentials := requestCredentials{server: opts.Server, bootstrap: opts.Bootstrap, renewWithCertificate: opts.Host}
	lifetime := ptr.To(CertificateLifetimeSeconds * time.Second)
	if opts.Host {
		lifetime = nil
	}
	logger := klog.Logger(opts.Log)
	// The kubelet's pki folder is its own: keys are not for others.
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the node certificate folder %s: %w", opts.Dir, err)
	}
	store, err := certificate.NewFileStoreWithLogger(logger, CertificatePrefix, opts.Dir, opts.Dir, "", "")
	if err != nil {
		return nil, fmt.Errorf("opening the node certificate store in %s: %w", opts.Dir, err)
	}
	managerCtx := klog.NewContext(ctx, logger)
	manager, err := certificate.NewManager(&certificate.Config{
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			config, err := credentials.configFor(current)
			if err != nil {
				return nil, err
			}
			return kubernetes.NewForConfig(config)
		},
		GetTemplate: func() *x509.CertificateRequest {
			return CertificateRequest(opts.NodeName)
		},
		SignerName:                   SignerName,
		RequestedCertificateLifetime: lifetime,
		GetUsages:                    certificate.DefaultKubeletClientGetUsages,
		CertificateStore:             store,
		BootstrapCertificatePEM:      opts.InitialCertificatePEM,
		BootstrapKeyPEM:              opts.InitialKeyPEM,
		Name:                         "nodelet client",
		Ctx:                          &managerCtx,
		CertificateRenewFailure:      kubeletmetrics.ClientCertificateRenewErrors,
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: starting the client certificate manager: %w", opts.NodeName, err)
	}
	kubeletmetrics.SetClientCertificateSource(manager.Current)
	manager.Start()
	go func() {
		<-ctx.Done()
		manager.Stop()
	}()
	return &Identity{manager: manager, username: nodeuser.Name(opts.NodeName), server: opts.Server, log: opts.Log, rotationCheck: 10 * time.Second}, nil
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
