package main

import (
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/server"
)

// newNodeServer builds the node's HTTPS API (package server) from the
// options: the kubelet's port 10250.
func newNodeServer(opts Options, clientset kubernetes.Interface, pods client.Reader, runtimeService cri.RuntimeService,
	imageService cri.ImageManagerService, volumes server.VolumeStats, healthz func() error, reportedIPs func() []string, clk clock.WithTicker) (*server.Server, error) {
	certDir := opts.certDir()
	// Until the Node is registered, the configured IP is the node's.
	nodeIPs := func() []string {
		if ips := reportedIPs(); len(ips) > 0 {
			return ips
		}
		if opts.NodeIP != "" {
			return []string{opts.NodeIP}
		}
		return nil
	}
	configz, err := opts.configuration()
	if err != nil {
		return nil, err
	}
	return server.New(server.Config{
		Options: server.Options{
			NodeName: opts.NodeName,
			Address:  opts.Address,
			Port:     opts.Port,
			RootDir:  opts.RootDir,
			TLS: server.TLSOptions{
				CertFile:           opts.TLSCertFile,
				KeyFile:            opts.TLSPrivateKeyFile,
				CertDir:            certDir,
				RotateCertificates: opts.RotateServerCertificates,
			},
			Auth: server.AuthOptions{
				ClientCAFile:      opts.ClientCAFile,
				Anonymous:         opts.AnonymousAuth,
				TokenWebhook:      opts.AuthenticationTokenWebhook,
				TokenCacheTTL:     opts.AuthenticationTokenWebhookCacheTTL.Duration,
				AuthorizationMode: opts.AuthorizationMode,
				AuthorizedTTL:     opts.AuthorizationWebhookCacheAuthorizedTTL.Duration,
				UnauthorizedTTL:   opts.AuthorizationWebhookCacheUnauthorizedTTL.Duration,
			},
		},
		Client:       clientset,
		Pods:         pods,
		Runtime:      runtimeService,
		Images:       imageService,
		Healthz:      healthz,
		Metrics:      ctrlmetrics.Registry,
		ProbeMetrics: kubeletmetrics.ProbeRegistry,
		Volumes:      volumes,
		Configz:      configz,
		NodeIPs:      nodeIPs,
		Clock:        clk,
		Log:          ctrl.Log.WithName("server"),
	})
}
