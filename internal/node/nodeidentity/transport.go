package nodeidentity

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
)

// RESTConfig is the API client configuration of the node: the server and
// CA of Options.Server, and the node's current certificate as
// its only credential. A TLS connection shows the certificate it was made
// with for as long as it lives, so once a renewed certificate is in use
// the connections made with the old one are closed; requests then open
// new ones with the new certificate. That check runs until ctx ends.
func (i *Identity) RESTConfig(ctx context.Context) (*rest.Config, error) {
	// The server and the CA that checks it, without any other
	// credentials.
	config := rest.AnonymousClientConfig(i.server)
	tlsConfig, err := rest.TLSConfigFor(config)
	if err != nil {
		return nil, fmt.Errorf("building the node's TLS configuration: %w", err)
	}
	if tlsConfig == nil {
		return nil, fmt.Errorf("the API server %s is not reached over TLS: a client certificate cannot be shown", config.Host)
	}
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cert := i.Current(); cert != nil {
			return cert, nil
		}
		// No certificate (expired): the request goes unauthenticated and
		// is refused, until the renewal.
		return &tls.Certificate{}, nil
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	go i.closeConnectionsOnRotation(ctx, dialer)

	// A custom transport carries the TLS settings: the configuration
	// must hold none of its own.
	config.TLSClientConfig = rest.TLSClientConfig{}
	config.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         dialer.DialContext,
	})
	return config, nil
}

// closeConnectionsOnRotation closes the API connections each time the
// certificate in use changes.
func (i *Identity) closeConnectionsOnRotation(ctx context.Context, dialer *connrotation.Dialer) {
	last := i.Current()
	wait.UntilWithContext(ctx, func(context.Context) {
		current := i.Current()
		if current == nil || current == last {
			return
		}
		last = current
		i.log.Info("Using the renewed node client certificate; closing the connections made with the previous one",
			"notAfter", current.Leaf.NotAfter)
		dialer.CloseAll()
	}, i.rotationCheck)
}
