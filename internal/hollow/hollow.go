// Package hollow runs a hollow nodelet: the real nodelet's API-facing work
// (the Node registered and its status kept, its Lease renewed, its pods
// watched, admitted, started, probed and reported with events) over the
// stateful CRI fake of k8s.io/cri-api/pkg/apis/testing, with no cgroups,
// mounts or CNI: pods' volumes are empty folders, their IPs come from a
// fake range, the node's capacity is what it is told. It is to nodelet
// what kubemark's hollow kubelet is to the kubelet: many of them, in one
// process, load one API server as many real nodes would.
package hollow

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/controllers"
	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/nodeclient"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/pod/podenv"
	"github.com/nodelet/nodelet/internal/prober"
	"github.com/nodelet/nodelet/internal/resources/admission"
	"github.com/nodelet/nodelet/internal/resources/allocation"
	noderuntime "github.com/nodelet/nodelet/runtime"
	"github.com/nodelet/nodelet/runtime/runtimeclass"
)

// Options describe one hollow node.
type Options struct {
	// NodeName is the Node's name. Required.
	NodeName string
	// Config reaches the API server as the node (system:node:NodeName, so
	// that the Node authorizer confines it as it does a real node).
	// Required. Its QPS and Burst are nodelet's defaults when zero.
	Config *rest.Config
	// StateDir holds the pods' folders, logs and allocations. Required.
	StateDir string
	// PodCIDR is the range pod IPs are handed out from. Required.
	PodCIDR netip.Prefix
	// NodeIP is the node's InternalIP. Default: the host's.
	NodeIP string
	// ClusterDNS and ClusterDomain are nodelet's --cluster-dns and
	// --cluster-domain. Default: none, and every pod of DNS policy
	// ClusterFirst gets the MissingClusterDNS events, on it and on the Node.
	ClusterDNS    []string
	ClusterDomain string
	// Capacity: the node's CPU in thousandths, memory and ephemeral
	// storage in bytes, and pods. Defaults: 4 CPUs, 16 GiB, 100 GiB,
	// nodelet's default max pods.
	MilliCPUs             int64
	MemoryBytes           int64
	EphemeralStorageBytes int64
	MaxPods               int
	// Version is reported as nodeInfo.kubeletVersion.
	Version string
	// Log is the node's logger.
	Log logr.Logger
}

// defaults are nodelet's own (api/config/v1alpha1): the same cadences and
// client limits as a real node.
func defaults() *configv1alpha1.NodeletConfiguration {
	c := &configv1alpha1.NodeletConfiguration{}
	configv1alpha1.SetDefaults(c)
	return c
}

// Run runs one hollow node until ctx ends.
func Run(ctx context.Context, opts Options) error {
	mgr, err := New(ctx, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// New wires one hollow node into a manager, as main.go wires a real one,
// with the runtime, volumes, cgroups and network made hollow, and without
// the parts that only look after the machine (eviction, image and
// container log housekeeping, the node's own HTTPS API).
func New(ctx context.Context, opts Options) (manager.Manager, error) {
	if opts.NodeName == "" || opts.Config == nil || opts.StateDir == "" || !opts.PodCIDR.IsValid() {
		return nil, fmt.Errorf("hollow node %q: NodeName, Config, StateDir and PodCIDR are required", opts.NodeName)
	}
	c := defaults()
	log := opts.Log
	clk := clock.RealClock{}

	restConfig := rest.CopyConfig(opts.Config)
	if restConfig.QPS == 0 {
		restConfig.QPS, restConfig.Burst = float32(ptr.Deref(c.KubeAPIQPS, 0)), int(c.KubeAPIBurst)
	}
	if restConfig.UserAgent == "" {
		restConfig.UserAgent = "nodelet/" + opts.Version + " (hollow)"
	}
	clientset, err := kubernetes.NewForConfig(nodeclient.Protobuf(restConfig))
	if err != nil {
		return nil, fmt.Errorf("hollow node %s: building API client: %w", opts.NodeName, err)
	}
	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// The same caches and clients as a real node's.
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:  scheme,
		Cache:   nodeclient.CacheOptions(opts.NodeName),
		Client:  nodeclient.ClientOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"},
		Logger:  log,
		// Many hollow nodes share one process, each with a pod controller.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("hollow node %s: building manager: %w", opts.NodeName, err)
	}

	dirs := map[string]string{}
	for _, name := range []string{"pods", "pod-logs", "containers", "allocations"} {
		dirs[name] = filepath.Join(opts.StateDir, name)
		if err := os.MkdirAll(dirs[name], 0o750); err != nil {
			return nil, fmt.Errorf("hollow node %s: %w", opts.NodeName, err)
		}
	}
	resolvConf := filepath.Join(opts.StateDir, "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver 127.0.0.53\n"), 0o600); err != nil {
		return nil, fmt.Errorf("hollow node %s: %w", opts.NodeName, err)
	}

	recorder := nodeclient.NewEventRecorder(ctx, clientset, scheme, opts.NodeName)
	runtimeService, imageService := newFakeRuntime()
	go forgetCalls(ctx, runtimeService, imageService, time.Minute)
	ips := newPodIPs(opts.PodCIDR)
	allocations, err := allocation.Open(dirs["allocations"])
	if err != nil {
		return nil, fmt.Errorf("hollow node %s: %w", opts.NodeName, err)
	}
	podCache := pleg.NewCache()
	podQueue := controllers.NewPodQueue(podCache, clk)
	runtimeManager, err := noderuntime.NewManager(ctx, runtimeService, imageService, noderuntime.Config{
		PodLogDir:       dirs["pod-logs"],
		ContainerLogDir: dirs["containers"],
		ResolvConf:      resolvConf,
		NodeIP:          opts.NodeIP,
		ClusterDNS:      noderuntime.ClusterDNS{Servers: opts.ClusterDNS, Domain: opts.ClusterDomain},
		NodeName:        opts.NodeName,
		SandboxIPs:      ips.SandboxIPs,
		RuntimeClasses:  runtimeclass.Resolver{Client: clientset},
		Resizes:         allocations,
		// No bind mounts: the sub path is handed over as it is.
		PrepareSubPath: func(sub kubecontainer.SubPath) (string, error) {
			return filepath.Join(sub.VolumePath, sub.Path), nil
		},
	}, recorder, clk, log.WithName("runtime"))
	if err != nil {
		return nil, fmt.Errorf("hollow node %s: %w", opts.NodeName, err)
	}

	machine := node.MachineInfo{
		MilliCPUs:             orDefault(opts.MilliCPUs, 4000),
		MemoryBytes:           orDefault(opts.MemoryBytes, 16<<30),
		EphemeralStorageBytes: orDefault(opts.EphemeralStorageBytes, 100<<30),
		KernelVersion:         "hollow",
		OSImage:               "hollow",
		OperatingSystem:       goruntime.GOOS,
		Architecture:          goruntime.GOARCH,
		SystemUUID:            opts.NodeName,
		BootID:                opts.NodeName,
		MaxPID:                4 << 20,
	}
	maxPods := opts.MaxPods
	if maxPods == 0 {
		maxPods = int(c.MaxPods)
	}
	var nodeIPs []string
	if opts.NodeIP != "" {
		nodeIPs = []string{opts.NodeIP}
	}
	nodeReporter, err := node.NewNodeStatusReporter(mgr.GetClient(), mgr.GetAPIReader(), runtimeService, node.NodeStatusOptions{
		NodeName:        opts.NodeName,
		NodeIPs:         nodeIPs,
		NodeletVersion:  opts.Version,
		MaxPods:         maxPods,
		RootDir:         opts.StateDir,
		Machine:         func() (node.MachineInfo, error) { return machine, nil },
		Images:          imageService,
		UpdateFrequency: c.NodeStatusUpdateFrequency.Duration,
		Clock:           clk,
		Log:             log.WithName("node"),
	})
	if err != nil {
		return nil, err
	}
	leases, err := node.NewLeaseRenewer(mgr.GetClient(), mgr.GetAPIReader(), node.LeaseOptions{
		NodeName: opts.NodeName,
		Clock:    clk,
		Log:      log.WithName("lease"),
	})
	if err != nil {
		return nil, err
	}
	// The Service informer a real node keeps for service links.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.Service{}); err != nil {
		return nil, fmt.Errorf("hollow node %s: setting up the Service informer: %w", opts.NodeName, err)
	}
	probes := prober.NewManager(prober.Options{
		Runner:   noderuntime.ExecRunner(runtimeService),
		Recorder: recorder,
		Clock:    clk,
		Log:      log.WithName("prober"),
		OnChange: podQueue.Enqueue,
	})
	admitter, err := admission.New(admission.Node{OS: goruntime.GOOS})
	if err != nil {
		return nil, fmt.Errorf("hollow node %s: setting up pod admission: %w", opts.NodeName, err)
	}
	podVolumes := volumes{root: dirs["pods"]}
	podCgroups := newPodCgroups()
	pods := controllers.NewPodReconciler(&controllers.PodReconciler{
		Queue:        podQueue,
		Admit:        admitter.Admit,
		AdmitResize:  admitter.AdmitResize,
		Allocations:  allocations,
		APIReader:    mgr.GetAPIReader(),
		Client:       mgr.GetClient(),
		Runtime:      runtimeManager,
		Volumes:      podVolumes,
		Cgroups:      podCgroups,
		Recorder:     recorder,
		Prober:       probes,
		Clock:        clk,
		NodeName:     opts.NodeName,
		HostIPs:      nodeReporter.NodeIPs,
		NetworkError: nodeReporter.NetworkError,
		EnvSources: &podenv.Gatherer{
			APIReader: mgr.GetAPIReader(),
			Cache:     mgr.GetClient(),
			NodeName:  opts.NodeName,
			Recorder:  recorder,
		},
	})
	if err := pods.SetupWithManager(mgr, int(c.ConcurrentReconciles)); err != nil {
		return nil, fmt.Errorf("hollow node %s: setting up pod controller: %w", opts.NodeName, err)
	}
	podLifecycle := pleg.New(runtimeManager, podCache, podQueue.Events(), c.RelistPeriod.Duration, clk, log.WithName("pleg"))
	housekeeping := &controllers.Housekeeping{
		Reconciler: pods,
		Runtime:    runtimeManager,
		Volumes:    podVolumes,
		Cgroups:    podCgroups,
		Clock:      clk,
		Log:        log.WithName("housekeeping"),
	}
	for _, runnable := range []manager.Runnable{nodeReporter, leases, podLifecycle, housekeeping, probes} {
		if err := mgr.Add(runnable); err != nil {
			return nil, err
		}
	}
	return mgr, nil
}

func orDefault(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}
