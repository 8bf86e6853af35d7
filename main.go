// nodelet runs the pods bound to its node through a CRI container runtime,
// as the kubelet does, built as a controller-runtime operator.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodelet/nodelet/controllers"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/shutdown"
	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/resources/allocation"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/resources/evictionmanager"
	"github.com/nodelet/nodelet/internal/resources/imagegc"
	"github.com/nodelet/nodelet/internal/resources/oomwatch"
	"github.com/nodelet/nodelet/internal/resources/userns"
	"github.com/nodelet/nodelet/internal/util/timerslack"
	"github.com/nodelet/nodelet/internal/volume"
	"github.com/nodelet/nodelet/internal/volume/csi"
	"github.com/nodelet/nodelet/network"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

func main() {
	// Millisecond timestamps: a pod starts in a fraction of a second.
	zapOpts := zap.Options{TimeEncoder: zapcore.ISO8601TimeEncoder}
	goFlags := flag.NewFlagSet("log", flag.ExitOnError)
	zapOpts.BindFlags(goFlags)
	opts, err := options.Parse(os.Args[1:], goFlags)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodelet: %v\n", err)
		os.Exit(2)
	}
	if opts.Version == "true" {
		// As the kubelet prints it: kubeadm's preflight reads it.
		fmt.Println("Kubernetes " + version)
		return
	}
	applyKubeletLogFlags(&zapOpts, opts)
	log := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	if slack := opts.TimerSlack.Duration; slack > 0 {
		// Before the manager starts its threads, which then inherit it.
		if err := timerslack.Set(slack); err != nil {
			log.Error(err, "Could not widen the timer slack; nodelet will wake more often", "timerSlack", slack)
		}
	}

	if gcPercent := int(*opts.GCPercent); gcPercent > 0 {
		debug.SetGCPercent(gcPercent)
	}

	ctx := ctrl.SetupSignalHandler()
	if err := run(ctx, opts); err != nil {
		log.Error(err, "nodelet stopped")
		os.Exit(1)
	}
}

// run builds nodelet's parts in the order a pod flows through them, adds
// them to one manager and runs it until ctx ends. Each build step is in
// the main_*.go file named after it.
func run(ctx context.Context, opts *options.NodeletServer) error {
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

	n := &nodelet{opts: opts, clock: clock.RealClock{}, log: log}
	// The node's API clients and manager (only this node's Pods and
	// Node are watched), the runtime's CRI services, the machine's facts.
	if err := n.connect(ctx); err != nil {
		return err
	}
	// The pod queue comes first: the PLEG, the prober and the CNI agent
	// feed it, the pod reconciler drains it, and none holds another.
	n.podCache = pleg.NewCache()
	n.podQueue = controllers.NewPodQueue(n.podCache, n.clock)
	// What a pod's sandbox and containers are given: its network, its
	// volumes, then the runtime that makes them; the cgroups that bound
	// them.
	if err := n.buildNetwork(); err != nil {
		return err
	}
	if err := n.buildVolumes(); err != nil {
		return err
	}
	if err := n.buildRuntime(ctx); err != nil {
		return err
	}
	if err := n.buildCgroups(); err != nil {
		return err
	}
	// The Node the pods run on: its status, Lease, eviction and image GC.
	if err := n.buildNode(); err != nil {
		return err
	}
	// The pods themselves: admitted, probed, reconciled, relisted.
	if err := n.buildPods(ctx); err != nil {
		return err
	}
	// What the API server and monitoring reach the node for.
	if err := n.buildServer(); err != nil {
		return err
	}
	return n.start(ctx)
}

// nodelet holds the parts run builds, for the steps that wire one to the
// next: the kubelet's Kubelet struct, as plain wiring.
type nodelet struct {
	opts  *options.NodeletServer
	clock clock.WithTicker
	log   logr.Logger

	// connect
	clientset      kubernetes.Interface
	mgr            manager.Manager
	recorder       record.EventRecorder
	runtimeService cri.RuntimeService
	imageService   cri.ImageManagerService
	share          machineShare

	podCache *pleg.Cache
	podQueue *controllers.PodQueue

	podNetwork     *network.Manager
	csiDrivers     *csi.Drivers
	podVolumes     *volume.Manager
	userNamespaces *userns.Manager
	allocations    *allocation.Store
	oomKills       *oomwatch.Watcher
	runtimeManager *noderuntime.Manager
	allocatable    node.AllocatableConfig
	podCgroups     *cgroups.Manager
	imageGC        *imagegc.Manager
	evictions      *evictionmanager.Manager
	shutdown       *shutdown.Manager
	nodeReporter   *node.NodeStatusReporter
	pods           *controllers.PodReconciler
	podLifecycle   *pleg.PLEG

	// runnables are the parts that run with the manager, in the order
	// they were built; local are those that need no API server, started
	// before it answers (the manager starts its runnables only once its
	// caches have synced).
	runnables []manager.Runnable
	local     []manager.Runnable
	// apiSynced is set once the manager's cache has synced.
	apiSynced atomic.Bool
}

// start adds the built parts and the health checks to the manager and
// runs it until ctx ends.
func (n *nodelet) start(ctx context.Context) error {
	for _, runnable := range n.runnables {
		if err := n.mgr.Add(runnable); err != nil {
			return err
		}
	}
	if err := n.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := n.mgr.AddHealthzCheck("pleg", func(*http.Request) error { return n.plegHealthy() }); err != nil {
		return err
	}
	if err := n.mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// The manager waits for the API server before it starts its
	// runnables; the local parts run the static pods meanwhile. One that
	// fails stops them all.
	group, ctx := errgroup.WithContext(ctx)
	for _, runnable := range n.local {
		group.Go(func() error { return runnable.Start(ctx) })
	}
	group.Go(func() error { return n.mgr.Start(ctx) })
	return group.Wait()
}

// lockRootDir takes an exclusive lock on the root dir's lock file, so two
// nodelets never share one node's state.
func lockRootDir(rootDir string) (func(), error) {
	if err := os.MkdirAll(rootDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating root dir: %w", err)
	}
	path := filepath.Join(rootDir, "nodelet.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another nodelet holds %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
