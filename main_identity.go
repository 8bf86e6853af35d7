package main

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelet/nodelet/internal/node/nodeidentity"
	"github.com/nodelet/nodelet/internal/options"
)

// nodeRestConfig is how nodelet reaches the API server as its node. With
// --node-identity=csr or --bootstrap-kubeconfig it first obtains the
// node's client certificate (waiting for its approval: a nodelet that
// cannot speak as its node has nothing to do), then keeps it renewed
// until ctx ends.
func nodeRestConfig(ctx context.Context, opts *options.NodeletServer) (*rest.Config, error) {
	if opts.BootstrapKubeconfig != "" {
		return hostRestConfig(ctx, opts)
	}
	config, err := loadRestConfig(opts.Kubeconfig)
	if err != nil || opts.NodeIdentity != options.NodeIdentityCSR {
		return config, err
	}
	return startIdentity(ctx, nodeidentity.Options{
		NodeName:  opts.NodeName,
		Dir:       opts.CertificateDir(),
		Bootstrap: config,
		Log:       ctrl.Log.WithName("identity"),
	})
}

// hostRestConfig is the kubelet's TLS bootstrap: --kubeconfig while its
// certificate is usable, else a certificate requested with
// --bootstrap-kubeconfig, and --kubeconfig written to point at it; renewed
// with itself, for the signer's lifetime, as the kubelet's.
func hostRestConfig(ctx context.Context, opts *options.NodeletServer) (*rest.Config, error) {
	log := ctrl.Log.WithName("identity")
	creds, err := nodeidentity.LoadHostCredentials(opts.Kubeconfig, opts.BootstrapKubeconfig, opts.CertificateDir(), opts.NodeName, time.Now())
	if err != nil {
		return nil, err
	}
	if creds.Bootstrapping != "" {
		log.Info("Requesting the node's client certificate with the bootstrap kubeconfig", "kubeconfig", opts.Kubeconfig,
			"reason", creds.Bootstrapping, "bootstrapKubeconfig", opts.BootstrapKubeconfig, "certificate", nodeidentity.CurrentPath(opts.CertificateDir()))
	}
	return startIdentity(ctx, nodeidentity.Options{
		NodeName:              opts.NodeName,
		Dir:                   opts.CertificateDir(),
		Server:                creds.Server,
		Bootstrap:             creds.Bootstrap,
		Host:                  true,
		InitialCertificatePEM: creds.InitialCertificatePEM,
		InitialKeyPEM:         creds.InitialKeyPEM,
		Log:                   log,
	})
}

// startIdentity starts keeping the node's certificate, waits for a valid
// one and returns the client configuration that shows it.
func startIdentity(ctx context.Context, opts nodeidentity.Options) (*rest.Config, error) {
	identity, err := nodeidentity.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := identity.Wait(ctx); err != nil {
		return nil, err
	}
	return identity.RESTConfig(ctx)
}
