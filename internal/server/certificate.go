package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/node/nodeuser"
)

// TLSOptions choose the serving certificate, as the kubelet's flags of the
// same names.
type TLSOptions struct {
	// CertFile and KeyFile are a certificate given by the operator; they
	// win over the others, and are read again when they change.
	CertFile string
	KeyFile  string
	// CertDir holds the self-signed certificate (nodelet.crt, nodelet.key),
	// made once and kept, or the requested ones
	// (nodelet-server-current.pem and the ones before it).
	CertDir string
	// RotateCertificates requests the certificate through the
	// certificates API, signer kubernetes.io/kubelet-serving, as the
	// kubelet's server TLS bootstrap, and requests the next one before it
	// expires. Such requests are approved by an administrator (or an
	// approver the cluster runs), never by nodelet.
	RotateCertificates bool
}

// ServingCertificateLifetime is the lifetime of a serving certificate
// requested through the certificates API: a day, as the companion node's
// client certificate's.
const ServingCertificateLifetime = 24 * time.Hour

// servingCertificate hands the TLS server its current certificate.
type servingCertificate struct {
	// static is a certificate given (the files' latest) or generated once.
	static atomic.Pointer[tls.Certificate]
	// reloader, with a certificate given as files, reads them again when
	// they change.
	reloader *fileReloader
	// manager, when rotating, requests and renews the certificate.
	manager certificate.Manager
}

func newServingCertificate(opts TLSOptions, nodeName string, nodeIPs func() []string, client kubernetes.Interface, log logr.Logger) (*servingCertificate, error) {
	s := &servingCertificate{}
	switch {
	case opts.CertFile != "" || opts.KeyFile != "":
		s.reloader = newFileReloader("serving certificate", []string{opts.CertFile, opts.KeyFile}, func(files [][]byte) error {
			cert, err := tls.X509KeyPair(files[0], files[1])
			if err != nil {
				return err
			}
			s.static.Store(&cert)
			return nil
		}, log)
		if _, err := s.reloader.check(); err != nil {
			return nil, err
		}
	case opts.RotateCertificates:
		manager, err := newCertificateManager(opts.CertDir, nodeName, nodeIPs, client, log)
		if err != nil {
			return nil, err
		}
		s.manager = manager
	default:
		cert, err := loadOrGenerateSelfSigned(opts.CertDir, nodeName, nodeIPs())
		if err != nil {
			return nil, err
		}
		s.static.Store(cert)
	}
	return s, nil
}

// start begins requesting and renewing a rotated certificate, or watching
// the given files; it stops with ctx.
func (s *servingCertificate) start(ctx context.Context, clk clock.WithTicker) {
	if s.reloader != nil {
		go s.reloader.run(ctx, clk, reloadResyncPeriod)
	}
	if s.manager == nil {
		return
	}
	s.manager.Start()
	go func() {
		<-ctx.Done()
		s.manager.Stop()
	}()
}

// get is the TLS server's GetCertificate: without a certificate yet (a
// request not approved yet), handshakes fail.
func (s *servingCertificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := s.static.Load(); cert != nil {
		return cert, nil
	}
	if s.manager != nil {
		if cert := s.manager.Current(); cert != nil {
			return cert, nil
		}
	}
	return nil, errors.New("no serving certificate is available yet (is nodelet's certificate signing request approved?)")
}

// loadOrGenerateSelfSigned loads nodelet.crt and nodelet.key from dir, or
// makes them, as the kubelet makes its own: a self-signed CA and a
// certificate it signed for the node's name and addresses.
func loadOrGenerateSelfSigned(dir, nodeName string, nodeIPs []string) (*tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, "nodelet.crt"), filepath.Join(dir, "nodelet.key")
	if cert, err := tls.LoadX509KeyPair(certPath, keyPath); err == nil {
		return &cert, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("loading the serving certificate %s: %w", certPath, err)
	}
	var ips []net.IP
	for _, ip := range nodeIPs {
		if parsed := net.ParseIP(ip); parsed != nil {
			ips = append(ips, parsed)
		}
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(nodeName, ips, nil)
	if err != nil {
		return nil, fmt.Errorf("generating a self-signed serving certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the certificate folder: %w", err)
	}
	if err := certutil.WriteCert(certPath, certPEM); err != nil {
		return nil, fmt.Errorf("writing the serving certificate: %w", err)
	}
	if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
		return nil, fmt.Errorf("writing the serving key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &cert, nil
}

// newCertificateManager is client-go's certificate manager set up as the
// kubelet's server certificate manager: it keeps the current certificate
// in dir, requests a new one through a CSR for system:node:<name> in
// system:nodes with the node's name and IPs, at 70 to 84% of the current
// one's life, and retries with back-off.
func newCertificateManager(dir, nodeName string, nodeIPs func() []string, client kubernetes.Interface, log logr.Logger) (certificate.Manager, error) {
	store, err := certificate.NewFileStoreWithLogger(klog.Logger(log), "nodelet-server", dir, dir, "", "")
	if err != nil {
		return nil, fmt.Errorf("opening the certificate store in %s: %w", dir, err)
	}
	ctx := klog.NewContext(context.Background(), log)
	return certificate.NewManager(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return client, nil },
		GetTemplate: func() *x509.CertificateRequest {
			return servingCertificateRequest(nodeName, nodeIPs())
		},
		SignerName: certificatesv1.KubeletServingSignerName,
		// Asked for, unlike the kubelet's (the signer's default, a year):
		// an approver that bounds lifetimes (nodelet-approver) can judge
		// it, and a certificate that cannot be revoked outlives its node
		// by a day at most. It is renewed at 70 to 90% of that.
		RequestedCertificateLifetime: ptr.To(ServingCertificateLifetime),
		GetUsages:                    certificate.DefaultKubeletServingGetUsages,
		CertificateStore:             store,
		Name:                         "nodelet serving",
		Ctx:                          &ctx,
	})
}

// servingCertificateRequest is what nodelet asks to be certified as: the
// node, for its name and IPs. Without an IP yet (the Node is not
// registered), there is nothing to ask for.
func servingCertificateRequest(nodeName string, nodeIPs []string) *x509.CertificateRequest {
	var ips []net.IP
	for _, ip := range nodeIPs {
		if parsed := net.ParseIP(ip); parsed != nil {
			ips = append(ips, parsed)
		}
	}
	if len(ips) == 0 {
		return nil
	}
	return &x509.CertificateRequest{
		Subject: pkix.Name{
			CommonName:   nodeuser.Name(nodeName),
			Organization: []string{nodeuser.Group},
		},
		DNSNames:    []string{nodeName},
		IPAddresses: ips,
	}
}
