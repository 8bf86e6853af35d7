package nodeidentity

import (
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
)

// requestCredentials say with which credentials a certificate is
// requested.
type requestCredentials struct {
	// server is the API server and its CA.
	server *rest.Config
	// bootstrap requests when the node's certificate is not used; nil
	// when there is none.
	bootstrap *rest.Config
	// renewWithCertificate: a valid certificate of the node requests the
	// next one.
	renewWithCertificate bool
}

// configFor is the client configuration the next certificate is requested
// with, current being the node's valid certificate, nil when it has none:
// that certificate alone when renewals use it, otherwise the bootstrap
// credentials.
func (c requestCredentials) configFor(current *tls.Certificate) (*rest.Config, error) {
	if c.renewWithCertificate && current != nil && current.PrivateKey != nil {
		return certificateConfig(c.server, current)
	}
	if c.bootstrap == nil {
		return nil, errors.New("the node's client certificate has expired and there are no bootstrap credentials to request another: give nodelet a bootstrap kubeconfig")
	}
	return c.bootstrap, nil
}

// certificateConfig is server's configuration with the certificate as its
// only credential.
func certificateConfig(server *rest.Config, cert *tls.Certificate) (*rest.Config, error) {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(cert.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the node's private key: %w", err)
	}
	var certPEM []byte
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	config := rest.AnonymousClientConfig(server)
	config.CertData, config.KeyData = certPEM, keyPEM
	return config, nil
}
