package main

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelet/nodelet/internal/node/nodeidentity"
)

// The values of --node-identity.
const (
	// NodeIdentityKubeconfig: --kubeconfig (or the in-cluster
	// configuration) holds the node's own credentials.
	NodeIdentityKubeconfig = "kubeconfig"
	// NodeIdentityCSR: --kubeconfig (or the in-cluster configuration, the
	// DaemonSet pod's bound service account token) only requests the
	// node's client certificate, with which nodelet then speaks.
	NodeIdentityCSR = "csr"
)

// nodeRestConfig is how nodelet reaches the API server as its node. With
// --node-identity=csr or --bootstrap-kubeconfig it first obtains the
// node's client certificate (waiting for its approval: a nodelet that
// cannot speak as its node has nothing to do), then keeps it renewed
// until ctx ends.
func nodeRestConfig(ctx context.Context, opts Options) (*rest.Config, error) {
	if opts.BootstrapKubeconfig != "" {
		return hostRestConfig(ctx, opts)
	}
	config, err := loadRestConfig(opts.Kubeconfig)
	if err != nil || opts.NodeIdentity != NodeIdentityCSR {
		return config, err
	}
	return startIdentity(ctx, nodeidentity.Options{
		NodeName:  opts.NodeName,
		Dir:       opts.certDir(),
		Bootstrap: config,
		Log:       ctrl.Log.WithName("identity"),
	})
}

// hostRestConfig is the kubelet's TLS bootstrap: --kubeconfig while its
// certificate is usable, else a certificate requested with
// --bootstrap-kubeconfig, and --kubeconfig written to point at it; renewed
// with itself, for the signer's lifetime, as the kubelet's.
func hostRestConfig(ctx context.Context, opts Options) (*rest.Config, error) {
	log := ctrl.Log.WithName("identity")
	creds, err := nodeidentity.LoadHostCredentials(opts.Kubeconfig, opts.BootstrapKubeconfig, opts.certDir(), opts.NodeName, time.Now())
	if err != nil {
		return nil, err
	}
	if creds.Bootstrapping != "" {
		log.Info("Requesting the node's client certificate with the bootstrap kubeconfig", "kubeconfig", opts.Kubeconfig,
			"reason", creds.Bootstrapping, "bootstrapKubeconfig", opts.BootstrapKubeconfig, "certificate", nodeidentity.CurrentPath(opts.certDir()))
	}
	return startIdentity(ctx, nodeidentity.Options{
		NodeName:              opts.NodeName,
		Dir:                   opts.certDir(),
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

// validateBootstrap checks --bootstrap-kubeconfig against the flags it
// goes with: it needs --kubeconfig, the file it writes, and is the host's
// way to the node's certificate, not the DaemonSet pod's.
func (o *Options) validateBootstrap() error {
	switch {
	case o.BootstrapKubeconfig == "":
		return nil
	case o.Kubeconfig == "":
		return errors.New("--bootstrap-kubeconfig needs --kubeconfig: the kubeconfig it writes for the node's certificate")
	case o.NodeIdentity == NodeIdentityCSR:
		return errors.New("--bootstrap-kubeconfig and --node-identity=csr are two ways to the node's certificate: give one")
	}
	return nil
}

// certDir is --cert-dir, by default <root-dir>/pki: the node's client
// and serving certificates.
func (o *Options) certDir() string {
	if o.CertDir != "" {
		return o.CertDir
	}
	return filepath.Join(o.RootDir, "pki")
}
