package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/nodelet/nodelet/controllers"
	"github.com/nodelet/nodelet/internal/node/shutdown"
	"github.com/nodelet/nodelet/internal/pleg"
	"github.com/nodelet/nodelet/internal/pod/podenv"
	"github.com/nodelet/nodelet/internal/pod/staticpod"
	"github.com/nodelet/nodelet/internal/prober"
	"github.com/nodelet/nodelet/internal/resources/admission"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// buildPods sets up what runs the pods: the prober, which requeues a pod
// whose probe result changed; admission, with what this node is; the pod
// reconciler, which admits, decides, acts and reports; the PLEG, which
// relists the runtime into the pod queue; and housekeeping, which cleans
// up after the pods that are gone.
func (n *nodelet) buildPods(ctx context.Context) error {
	opts := n.opts
	// The service environment variables come from an informer over every
	// Service, started with the manager: one LIST and WATCH per node, as
	// the kubelet keeps, and no API call per pod start.
	if _, err := n.mgr.GetCache().GetInformer(ctx, &corev1.Service{}); err != nil {
		return fmt.Errorf("setting up the Service informer: %w", err)
	}
	probes := prober.NewManager(prober.Options{
		Runner:   noderuntime.ExecRunner(n.runtimeService),
		Recorder: n.recorder,
		Clock:    n.clock,
		Log:      n.log.WithName("prober"),
		OnChange: n.podQueue.Enqueue,
	})
	// Which sysctls are safe depends on the kernel the Node reports.
	admitter, err := admission.NewForNode(n.share.machine.OperatingSystem, n.share.machine.KernelVersion, opts.AllowedUnsafeSysctls, opts.HostPortsShared)
	if err != nil {
		return err
	}
	// The static pods: read from their sources from the start, run
	// before and without the API server.
	var staticPods *staticpod.Sources
	if opts.StaticPodPath != "" || opts.StaticPodURL != "" {
		staticPods = staticpod.NewSources(staticpod.Options{
			NodeName:           opts.NodeName,
			Path:               opts.StaticPodPath,
			FileCheckFrequency: opts.FileCheckFrequency.Duration,
			URL:                opts.StaticPodURL,
			Header:             http.Header(opts.StaticPodURLHeader),
			HTTPCheckFrequency: opts.HTTPCheckFrequency.Duration,
			OnChange: func(key types.NamespacedName) {
				n.podQueue.Enqueue(ctx, key.Namespace, key.Name, "")
			},
			Clock: n.clock,
			Log:   n.log.WithName("staticpod"),
		})
	}
	n.pods = controllers.NewPodReconciler(&controllers.PodReconciler{
		Queue:        n.podQueue,
		Admit:        shutdownAdmission(admitter.Admit, n.shutdown),
		AdmitResize:  admitter.AdmitResize,
		Allocations:  n.allocations,
		APIReader:    n.mgr.GetAPIReader(),
		Client:       n.mgr.GetClient(),
		Runtime:      n.runtimeManager,
		Volumes:      n.podVolumes,
		Cgroups:      n.podCgroups,
		Recorder:     n.recorder,
		Prober:       probes,
		Clock:        n.clock,
		NodeName:     opts.NodeName,
		HostIPs:      n.nodeReporter.NodeIPs,
		NetworkError: n.nodeReporter.NetworkError,
		Eviction:     evictionOrders(n.evictions, n.shutdown),

		UserNamespaces: n.userNamespaces,

		APISynced:             n.apiSynced.Load,
		SlowPodStartThreshold: opts.SlowPodStartThreshold.Duration,
		EnvSources: &podenv.Gatherer{
			APIReader: n.mgr.GetAPIReader(),
			Cache:     n.mgr.GetClient(),
			NodeName:  opts.NodeName,
			Recorder:  n.recorder,
		},
	})
	if staticPods != nil {
		n.pods.StaticPods = staticPods
	}
	podController, err := n.pods.NewController(n.mgr, int(opts.ConcurrentReconciles))
	if err != nil {
		return fmt.Errorf("setting up pod controller: %w", err)
	}
	n.podLifecycle = pleg.New(n.runtimeManager, n.podCache, n.podQueue.Events(), opts.RelistPeriod.Duration, n.clock, n.log.WithName("pleg"))
	housekeeping := &controllers.Housekeeping{
		Reconciler: n.pods,
		Runtime:    n.runtimeManager,
		Volumes:    n.podVolumes,
		Cgroups:    n.podCgroups,
		Clock:      n.clock,
		Log:        n.log.WithName("housekeeping"),

		UserNamespaces: n.userNamespaces,
	}
	// The pod controller, the PLEG and the prober run without the API
	// server; once its cache has synced, the API's pods run too and the
	// static pods' mirror pods are made (apiAnswered).
	n.local = append(n.local, probes, n.podLifecycle, podController)
	if staticPods != nil {
		n.local = append(n.local, staticPods)
	}
	n.runnables = append(n.runnables, housekeeping, manager.RunnableFunc(func(ctx context.Context) error {
		n.apiAnswered(ctx, staticPods)
		return nil
	}))
	return nil
}

// shutdownAdmission refuses every pod while the node shuts down, after
// admission's own checks, as the kubelet's shutdown manager is its last
// admit handler. A critical pod refused so preempts nothing.
func shutdownAdmission(admit controllers.AdmitFunc, s *shutdown.Manager) controllers.AdmitFunc {
	return func(pod *corev1.Pod, node *corev1.Node, admitted []*corev1.Pod) admission.Result {
		r := admit(pod, node, admitted)
		if !r.Admit {
			return r
		}
		if refused := s.Admit(); !refused.Admit {
			return refused
		}
		return r
	}
}

// apiAnswered runs once the manager's cache has synced: the API's pods may
// be read, and every static pod is looked at again for its mirror pod.
func (n *nodelet) apiAnswered(ctx context.Context, staticPods *staticpod.Sources) {
	n.log.Info("The API server answered; running its pods and the static pods' mirror pods")
	n.apiSynced.Store(true)
	if staticPods != nil {
		for _, pod := range staticPods.List() {
			n.podQueue.Enqueue(ctx, pod.Namespace, pod.Name, pod.UID)
		}
	}
}

// plegHealthy is the PLEG's health check, on /healthz and the node
// server's: it fails when the runtime has not been relisted recently.
func (n *nodelet) plegHealthy() error {
	if !n.podLifecycle.Healthy() {
		return errors.New("the PLEG has not relisted the runtime recently")
	}
	return nil
}
