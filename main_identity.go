package main

import (
	"context"
	"path/filepath"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nodelet/nodelet/nodeidentity"
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
// --node-identity=csr it first obtains the node's client certificate
// (waiting for its approval: a nodelet that cannot speak as its node has
// nothing to do), then keeps it renewed until ctx ends.
func nodeRestConfig(ctx context.Context, opts Options) (*rest.Config, error) {
	config, err := loadRestConfig(opts.Kubeconfig)
	if err != nil || opts.NodeIdentity != NodeIdentityCSR {
		return config, err
	}
	identity, err := nodeidentity.Start(ctx, nodeidentity.Options{
		NodeName:  opts.NodeName,
		Dir:       opts.certDir(),
		Bootstrap: config,
		Log:       ctrl.Log.WithName("identity"),
	})
	if err != nil {
		return nil, err
	}
	if err := identity.Wait(ctx); err != nil {
		return nil, err
	}
	return identity.RESTConfig(ctx)
}

// certDir is --cert-dir, by default <root-dir>/pki: the node's client
// and serving certificates.
func (o *Options) certDir() string {
	if o.CertDir != "" {
		return o.CertDir
	}
	return filepath.Join(o.RootDir, "pki")
}
