package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/nodeclient"
	"github.com/nodelet/nodelet/internal/node/nodeidentity"
	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/runtime/instrumented"
)

// connect reaches what the node works with: the API server as the node
// (its identity, main_identity.go), the manager whose caches hold this
// node's Pods and Node only, the event recorder, the runtime's CRI
// services and the machine's facts, or the companion's share of them.
func (n *nodelet) connect(ctx context.Context) error {
	opts := n.opts
	restConfig, err := nodeRestConfig(ctx, opts)
	if err != nil {
		return err
	}
	restConfig.UserAgent = "nodelet/" + version
	restConfig.QPS, restConfig.Burst = float32(*opts.KubeAPIQPS), int(opts.KubeAPIBurst)
	n.clientset, err = kubernetes.NewForConfig(nodeclient.Protobuf(restConfig))
	if err != nil {
		return fmt.Errorf("building API client: %w", err)
	}

	n.runtimeService, n.imageService, err = connectRuntime(ctx, opts)
	if err != nil {
		return err
	}
	if n.share, err = readMachineShare(ctx, opts); err != nil {
		return err
	}

	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	n.mgr, err = ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  nodeclient.CacheOptions(opts.NodeName),
		Client:                 nodeclient.ClientOptions(),
		MapperProvider:         nodeclient.NewRESTMapper,
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress: opts.HealthProbeBindAddress(),
		PprofBindAddress:       opts.PprofBindAddress,
	})
	if err != nil {
		return fmt.Errorf("building manager: %w", err)
	}
	n.recorder = nodeclient.NewEventRecorder(ctx, n.clientset, scheme, opts.NodeName)
	// The kubelet's reason, so that `kubectl describe node` and event
	// watchers see each start.
	n.recorder.Event(node.Ref(opts.NodeName), corev1.EventTypeNormal, "Starting", "Starting nodelet.")
	kubeletmetrics.SetNodeName(opts.NodeName)
	kubeletmetrics.SetBuildInfo(version, commit)
	return nil
}

func loadRestConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return ctrl.GetConfig()
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return config, nil
}

// connectRuntime dials the CRI endpoint and waits, for a while, until the
// runtime answers: on a booting node it may start after nodelet.
func connectRuntime(ctx context.Context, opts *options.NodeletServer) (cri.RuntimeService, cri.ImageManagerService, error) {
	timeout := opts.RuntimeRequestTimeout.Duration
	// No tracer provider: nodelet exports no traces, and a nil one keeps
	// the gRPC stats handler off every CRI call.
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(opts.ContainerRuntimeEndpoint).WithConnectionTimeout(timeout).
		WithTracerProvider(nil).Build(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the container runtime at %s: %w", opts.ContainerRuntimeEndpoint, err)
	}
	imageService, err := remote.NewRemoteImageServiceBuilder().
		WithEndpoint(opts.ContainerRuntimeEndpoint).WithConnectionTimeout(timeout).
		WithTracerProvider(nil).Build(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the image service at %s: %w", opts.ContainerRuntimeEndpoint, err)
	}
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, lastErr = runtimeService.Version(ctx, "")
		return lastErr == nil, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("container runtime at %s does not answer: %w", opts.ContainerRuntimeEndpoint, errors.Join(err, lastErr))
	}
	// Counted and timed from here on, as the kubelet's
	// runtime_operations metrics (the wait above is not).
	return instrumented.RuntimeService(runtimeService), instrumented.ImageService(imageService), nil
}

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
