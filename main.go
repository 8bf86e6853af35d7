// nodelet runs the pods bound to its node through a CRI container runtime,
// as the kubelet does, built as a controller-runtime operator.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"go.uber.org/zap/zapcore"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelet/nodelet/controllers"
	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/pod/podenv"
	"github.com/nodelet/nodelet/internal/prober"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/resources/imagegc"
	"github.com/nodelet/nodelet/internal/resources/oomwatch"
	"github.com/nodelet/nodelet/internal/server/logs"
	"github.com/nodelet/nodelet/internal/util/timerslack"
	"github.com/nodelet/nodelet/internal/volume"
	"github.com/nodelet/nodelet/internal/volume/csi"
	"github.com/nodelet/nodelet/network"
	noderuntime "github.com/nodelet/nodelet/runtime"
	"github.com/nodelet/nodelet/runtime/runtimeclass"
)

func main() {
	// Millisecond timestamps: a pod starts in a fraction of a second.
	zapOpts := zap.Options{TimeEncoder: zapcore.ISO8601TimeEncoder}
	goFlags := flag.NewFlagSet("log", flag.ExitOnError)
	zapOpts.BindFlags(goFlags)
	opts, err := parseOptions(os.Args[1:], goFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodelet: %v\n", err)
		os.Exit(2)
	}
	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if opts.TimerSlack > 0 {
		// Before the manager starts its threads, which then inherit it.
		if err := timerslack.Set(opts.TimerSlack); err != nil {
			log.Error(err, "Could not widen the timer slack; nodelet will wake more often", "timerSlack", opts.TimerSlack)
		}
	}

	if opts.GCPercent > 0 {
		debug.SetGCPercent(opts.GCPercent)
	}

	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, opts); err != nil {
		log.Error(err, "nodelet stopped")
		os.Exit(1)
	}
}

// run wires nodelet's parts into one manager and runs it until ctx ends.
func run(ctx context.Context, opts Options) error {
	log := ctrl.Log
	ctx = klog.NewContext(ctx, log)
	log.Info("Starting nodelet", "node", opts.NodeName, "version", version)

	unlock, err := lockRootDir(opts.RootDir)
	if err != nil {
		return err
	}
	defer unlock()
	if err := volume.MakeRShared(opts.RootDir); err != nil {
		// Only volumes mounted with HostToContainer or Bidirectional
		// propagation need it; their containers then fail to start with
		// the runtime's error, the other pods run.
		log.Error(err, "Could not make the root dir a shared mount; mount propagation will fail", "rootDir", opts.RootDir)
	}

	restConfig, err := nodeRestConfig(ctx, opts)
	if err != nil {
		return err
	}
	restConfig.UserAgent = "nodelet/" + version
	restConfig.QPS, restConfig.Burst = float32(opts.KubeAPIQPS), opts.KubeAPIBurst
	clientset, err := kubernetes.NewForConfig(protobufConfig(restConfig))
	if err != nil {
		return fmt.Errorf("building API client: %w", err)
	}

	runtimeService, imageService, err := connectRuntime(ctx, opts)
	if err != nil {
		return err
	}

	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme,
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				// Only this node's pods, filtered by the API server.
				&corev1.Pod{}: {Field: fields.OneTermEqualSelector("spec.nodeName", opts.NodeName)},
				// Only this node.
				&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", opts.NodeName)},
			},
			// nodelet never reads who manages which field; without them
			// every cached object is smaller, and so is every copy a
			// read from the cache makes.
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Client: client.Options{Cache: &client.CacheOptions{
			// Read straight from the API server: a cached Get would start
			// a cluster-wide watch that the node's identity may not make.
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}, &coordinationv1.Lease{}},
		}},
		LeaderElection:         false,
		Metrics:                metricsserver.Options{BindAddress: opts.MetricsBindAddress},
		HealthProbeBindAddress: opts.HealthProbeBindAddress,
		PprofBindAddress:       opts.PprofBindAddress,
	})
	if err != nil {
		return fmt.Errorf("building manager: %w", err)
	}

	recorder := newEventRecorder(ctx, clientset, scheme, opts.NodeName)
	clk := clock.RealClock{}

	// The pod queue comes first: the PLEG, the prober and the CNI agent
	// feed it, the pod reconciler drains it, and none holds another.
	podCache := pleg.NewCache()
	podQueue := controllers.NewPodQueue(podCache, clk)
	// The network: the mode's set-up now, the node's conflist and the agent
	// once the manager runs.
	podNetwork, err := network.NewManager(network.ManagerOptions{
		Mode:     network.Mode(opts.NetworkMode),
		NodeName: opts.NodeName,
		Config: network.ConfigOptions{
			ConfDir:     opts.CNIConfDir,
			BinDir:      opts.CNIBinDir,
			NetworkName: opts.CNINetworkName,
			Bridge:      opts.CNIBridge,
			IPAMDataDir: filepath.Join(opts.RootDir, "cni", "networks"),
		},
		PodCIDRs:     opts.podCIDRs(),
		StateDir:     filepath.Join(opts.RootDir, "cni"),
		AgentConfDir: opts.CNIAgentConfDir,
		ShimPath:     opts.CNIShimPath,
		CheckPeriod:  opts.CNICheckPeriod.Duration,
		Reader:       mgr.GetClient(),
		Sandboxes:    runtimeService,
		OnBroken: func(pod network.PodRef) {
			podQueue.Resync(pod.Namespace, pod.Name, types.UID(pod.UID))
		},
		Clock: clk,
		Log:   log.WithName("network"),
	})
	if err != nil {
		return err
	}
	csiDrivers := csi.NewDrivers()
	podVolumes := volume.NewManager(volume.Options{
		CSI:             csiDrivers,
		NodeName:        opts.NodeName,
		RootDir:         opts.RootDir,
		HostRoot:        opts.HostRoot,
		NodeAllocatable: nodeAllocatable(mgr.GetClient(), opts.NodeName),
		NodeLabels:      nodeLabels(mgr.GetClient(), opts.NodeName),
		StatsPeriod:     opts.volumeStatsPeriod(),
		Recorder:        recorder,
	}, clientset, clk, log.WithName("volume"))
	ctrlmetrics.Registry.MustRegister(&kubeletmetrics.VolumeStatsCollector{Claims: podVolumes.ClaimVolumeStats, Abnormal: podVolumes.ClaimVolumesAbnormal})
	spreadPodFolders(log, podVolumes.PodsDir(), 0o750)
	spreadPodFolders(log, opts.PodLogDir, 0o755)
	userNamespaces, err := newUserNamespaces(opts, podVolumes, log)
	if err != nil {
		return err
	}
	allocations := openAllocations(opts.RootDir, log)
	oomKills := oomwatch.New(oomwatch.KernelLog, log.WithName("oomwatch"))
	runtimeConfig := noderuntime.Config{
		PodLogDir:       opts.PodLogDir,
		ContainerLogDir: opts.ContainerLogDir,
		ResolvConf:      opts.ResolvConf,
		NodeIP:          opts.NodeIP,
		ClusterDNS:      noderuntime.ClusterDNS{Servers: opts.ClusterDNS, Domain: opts.ClusterDomain},
		NodeName:        opts.NodeName,

		ParallelSandboxStarts: opts.ParallelSandboxStarts,
		SandboxIPs:            podNetwork.SandboxIPs(),
		RuntimeClasses:        runtimeclass.Resolver{Client: clientset},
		UserNamespaces:        userNamespaces,
		Resizes:               allocations,
		PrepareSubPath:        volume.PrepareSubPathOnHost(opts.HostRoot, opts.RootDir),
		HostPaths:             noderuntime.HostPaths{RuntimeRoot: opts.RuntimeHostRoot, Shared: []string{opts.RootDir}},
		OOMKills:              oomKills,
	}

	runtimeManager, err := noderuntime.NewManager(ctx, runtimeService, imageService, runtimeConfig, recorder, clk, log.WithName("runtime"))
	if err != nil {
		return err
	}
	runtimeManager.CheckResolvConfLimits()
	share, err := opts.readMachineShare(ctx)
	if err != nil {
		return err
	}
	// The Node's allocatable keeps the reservations and hard eviction
	// thresholds from pods; the pods' cgroup is limited to the capacity
	// less the reservations under --enforce-node-allocatable=pods (the
	// thresholds are the eviction manager's to defend), to the capacity
	// otherwise.
	allocatable, err := opts.allocatableConfig()
	if err != nil {
		return err
	}
	// Checked before the pods' cgroup is limited: a reservation over the
	// capacity would leave the running pods nothing.
	if err := allocatable.Validate(node.Capacity(share.machine, opts.MaxPods)); err != nil {
		return fmt.Errorf("node %s: %w", opts.NodeName, err)
	}
	podCgroups, err := cgroups.New(cgroups.Options{
		Root:            share.cgroupRoot,
		Driver:          opts.CgroupDriver,
		PodPidsLimit:    opts.PodPidsLimit,
		NodeAllocatable: allocatable.PodsCgroupLimits(node.PodsCgroupCapacity(share.machine)),
	})
	if err != nil {
		return fmt.Errorf("setting up pod cgroups: %w", err)
	}
	if err := enforceNodeAllocatable(podCgroups, allocatable, recorder, opts.NodeName, log.WithName("cgroups")); err != nil {
		return fmt.Errorf("node %s: %w", opts.NodeName, err)
	}

	imageGC := imagegc.NewManager(imageService, runtimeService, imagegc.Options{
		Policy:   opts.imageGCPolicy(),
		NodeName: opts.NodeName,
		Recorder: recorder,
		Clock:    clk,
		Log:      log.WithName("imagegc"),
	})
	evictions, err := newEvictionManager(opts, mgr.GetClient(), runtimeService, imageService, runtimeManager, podVolumes, podCgroups, share, imageGC, podQueue, recorder, clk, log)
	if err != nil {
		return err
	}

	nodeReporter, err := node.NewNodeStatusReporter(mgr.GetClient(), mgr.GetAPIReader(), runtimeService, node.NodeStatusOptions{
		NodeName:           opts.NodeName,
		NodeIPs:            opts.nodeIPs(),
		NodeletVersion:     version,
		KubeletPort:        int32(opts.Port),
		MaxPods:            opts.MaxPods,
		RootDir:            opts.RootDir,
		RegisterWithTaints: opts.RegisterWithTaints,
		Hostname:           opts.HostnameOverride,
		Labels:             opts.nodeLabels(),
		Machine:            share.readMachine,
		Allocatable:        allocatable,
		Images:             imageService,
		UpdateFrequency:    opts.NodeStatusUpdateFrequency.Duration,
		NetworkStatus:      podNetwork.Status,
		Pressure:           evictions.PressureConditions,
		VolumesInUse:       podVolumes.VolumesInUse,
		Clock:              clk,
		Log:                log.WithName("node"),
	})
	if err != nil {
		return err
	}
	leases, err := node.NewLeaseRenewer(mgr.GetClient(), mgr.GetAPIReader(), node.LeaseOptions{
		NodeName: opts.NodeName,
		Clock:    clk,
		Log:      log.WithName("lease"),
	})
	if err != nil {
		return err
	}

	// The service environment variables come from an informer over every
	// Service, started with the manager: one LIST and WATCH per node, as
	// the kubelet keeps, and no API call per pod start.
	if _, err := mgr.GetCache().GetInformer(ctx, &corev1.Service{}); err != nil {
		return fmt.Errorf("setting up the Service informer: %w", err)
	}
	// The prober requeues a pod whose probe result changed; the reconciler
	// reads the prober's results.
	probes := prober.NewManager(prober.Options{
		Runner:   noderuntime.ExecRunner(runtimeService),
		Recorder: recorder,
		Clock:    clk,
		Log:      log.WithName("prober"),
		OnChange: podQueue.Enqueue,
	})
	admitter, err := newAdmitter(opts)
	if err != nil {
		return err
	}
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
		Eviction:     evictionOrders(evictions),

		UserNamespaces: userNamespaces,

		SlowPodStartThreshold: opts.SlowPodStartThreshold.Duration,
		EnvSources: &podenv.Gatherer{
			APIReader: mgr.GetAPIReader(),
			Cache:     mgr.GetClient(),
			NodeName:  opts.NodeName,
			Recorder:  recorder,
		},
	})
	if err := pods.SetupWithManager(mgr, opts.ConcurrentReconciles); err != nil {
		return fmt.Errorf("setting up pod controller: %w", err)
	}
	podLifecycle := pleg.New(runtimeManager, podCache, podQueue.Events(), opts.RelistPeriod.Duration, clk, log.WithName("pleg"))
	housekeeping := &controllers.Housekeeping{
		Reconciler: pods,
		Runtime:    runtimeManager,
		Volumes:    podVolumes,
		Cgroups:    podCgroups,
		Clock:      clk,
		Log:        log.WithName("housekeeping"),

		UserNamespaces: userNamespaces,
	}
	plegHealthy := func() error {
		if !podLifecycle.Healthy() {
			return errors.New("the PLEG has not relisted the runtime recently")
		}
		return nil
	}
	nodeServer, err := newNodeServer(opts, clientset, mgr.GetCache(), runtimeService, imageService, podVolumes, plegHealthy, nodeReporter.NodeIPs, clk)
	if err != nil {
		return err
	}
	logMaxSize, err := opts.containerLogMaxSize()
	if err != nil {
		return err
	}
	logRotator := logs.NewRotator(runtimeService, logs.RotationOptions{
		MaxSize:  logMaxSize,
		MaxFiles: opts.ContainerLogMaxFiles,
		Interval: opts.ContainerLogMonitorInterval.Duration,
	}, clk, log.WithName("logs"))
	csiWatcher := newCSIWatcher(opts, clientset, csiDrivers, clk, log)
	runnables := []manager.Runnable{podNetwork, nodeReporter, leases, podLifecycle, housekeeping, probes, nodeServer, logRotator, imageGC, evictions, csiWatcher, oomKills}
	for _, runnable := range runnables {
		if err := mgr.Add(runnable); err != nil {
			return err
		}
	}

	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("pleg", func(*http.Request) error { return plegHealthy() }); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// nodeAllocatable reads the node's allocatable resources from the cached
// Node; nil until the Node is registered.
func nodeAllocatable(cache client.Reader, nodeName string) func(context.Context) corev1.ResourceList {
	return func(ctx context.Context) corev1.ResourceList {
		node := &corev1.Node{}
		if err := cache.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			return nil
		}
		return node.Status.Allocatable
	}
}

// protobufConfig is config speaking protobuf, as the kubelet's clients do
// (its --kube-api-content-type): the clientset's requests and answers
// (events, token requests) are smaller than in JSON and cheaper for the
// API server to decode and encode. The manager's client speaks it already
// for built-in types.
func protobufConfig(config *rest.Config) *rest.Config {
	config = rest.CopyConfig(config)
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return config
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
func connectRuntime(ctx context.Context, opts Options) (cri.RuntimeService, cri.ImageManagerService, error) {
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
	return runtimeService, imageService, nil
}

// newEventRecorder records core/v1 Events as the kubelet does, from
// component "kubelet" on this node, so `kubectl describe pod` lists them
// and tools that select the kubelet's events find nodelet's.
func newEventRecorder(ctx context.Context, clientset kubernetes.Interface, scheme *apiruntime.Scheme, nodeName string) record.EventRecorder {
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clientset.CoreV1().Events("")})
	return broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "kubelet", Host: nodeName})
}
