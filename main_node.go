package main

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/controllers"
	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/node/shutdown"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/resources/evictionmanager"
	"github.com/nodelet/nodelet/internal/resources/imagegc"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// buildNode sets up the Node's side: the image garbage collector, the
// eviction manager (it reads the node's signals every housekeeping
// interval, frees dead containers and unused images under disk pressure,
// and has the pod reconciler carry out its evictions), the reporter that
// registers the Node and keeps its status true, and its Lease.
func (n *nodelet) buildNode() error {
	opts := n.opts
	n.imageGC = imagegc.NewManager(n.imageService, n.runtimeService, imagegc.Options{
		Policy:   opts.ImageGCPolicy(),
		NodeName: opts.NodeName,
		Recorder: n.recorder,
		Clock:    n.clock,
		Log:      n.log.WithName("imagegc"),
	})

	evictionConfig, err := opts.EvictionConfig()
	if err != nil {
		return err
	}
	n.evictions = evictionmanager.New(n.mgr.GetClient(), n.runtimeService, n.imageService, evictionmanager.Options{
		Config:              evictionConfig,
		NodeName:            opts.NodeName,
		MemoryCapacityBytes: n.share.machine.MemoryBytes,
		MemoryCgroup:        n.share.memoryCgroup,
		Cgroups:             n.podCgroups.Hierarchies(),
		RootDir:             opts.RootDir,
		NodeFsShareBytes:    n.share.nodeFsShareBytes(),
		PIDCgroupDir:        n.share.pidsCgroupDir,
		MaxPID:              n.share.machine.MaxPID,
		Containers:          &controllers.ContainerGC{Client: n.mgr.GetClient(), Runtime: n.runtimeManager, Log: n.log.WithName("containergc")},
		Images:              n.imageGC,
		LocalStorage: evictionmanager.LocalStorageMeter{
			PodLogDir: func(pod *corev1.Pod) string {
				return noderuntime.PodLogDir(opts.PodLogsDir, pod.Namespace, pod.Name, pod.UID)
			},
			VolumeDir: n.podVolumes.LocalVolumeDir,
		}.Measure,
		Enqueue:  n.podQueue.Resync,
		Recorder: n.recorder,
		Clock:    n.clock,
		Log:      n.log.WithName("eviction"),
	})

	// The node's graceful shutdown: off unless the settings give it time.
	n.shutdown = shutdown.New(n.mgr.GetClient(), shutdown.Options{
		Bands:    shutdown.Bands(opts.ShutdownGracePeriod.Duration, opts.ShutdownGracePeriodCriticalPods.Duration, opts.ShutdownGracePeriodByPodPriority),
		NodeName: opts.NodeName,
		Enqueue:  n.podQueue.Resync,
		Recorder: n.recorder,
		Clock:    n.clock,
		Log:      n.log.WithName("shutdown"),
	})

	n.nodeReporter, err = node.NewNodeStatusReporter(n.mgr.GetClient(), n.mgr.GetAPIReader(), n.runtimeService, node.NodeStatusOptions{
		NodeName:            opts.NodeName,
		NodeIPs:             opts.NodeIPs(),
		NodeletVersion:      version,
		KubeletPort:         opts.Port,
		MaxPods:             int(opts.MaxPods),
		RootDir:             opts.RootDir,
		RegisterWithTaints:  opts.RegisterWithTaints,
		Hostname:            opts.HostnameOverride,
		Labels:              opts.RegistrationLabels(),
		Machine:             n.share.readMachine,
		Allocatable:         n.allocatable,
		Images:              n.imageService,
		UpdateFrequency:     opts.NodeStatusUpdateFrequency.Duration,
		NetworkStatus:       n.podNetwork.Status,
		Pressure:            n.evictions.PressureConditions,
		VolumesInUse:        n.podVolumes.VolumesInUse,
		ShutdownStatus:      n.shutdown.ShutdownStatus,
		Recorder:            n.recorder,
		RuntimeRevision:     opts.RuntimeRevision,
		RuntimeRevisionFile: opts.RuntimeRevisionFile(),
		Clock:               n.clock,
		Log:                 n.log.WithName("node"),
	})
	if err != nil {
		return err
	}
	n.shutdown.SetSyncNodeStatus(n.nodeReporter.SyncNow)
	leases, err := node.NewLeaseRenewer(n.mgr.GetClient(), n.mgr.GetAPIReader(), node.LeaseOptions{
		NodeName: opts.NodeName,
		Clock:    n.clock,
		Log:      n.log.WithName("lease"),
	})
	if err != nil {
		return err
	}
	n.runnables = append(n.runnables, n.imageGC, n.evictions, n.shutdown, n.nodeReporter, leases)
	return nil
}

// evictionOrders is the pod reconciler's view of the orders to stop a pod
// of the node's own accord: the graceful shutdown's, then the eviction
// manager's; the pod to stop, its failure and grace period.
func evictionOrders(m *evictionmanager.Manager, s *shutdown.Manager) func(types.UID) (controllers.PodEviction, bool) {
	return func(uid types.UID) (controllers.PodEviction, bool) {
		if grace, ok := s.Order(uid); ok {
			return controllers.PodEviction{
				Failure:            podstatus.Failure{Reason: shutdown.ReasonTerminated, Message: shutdown.MessageTerminated},
				GracePeriodSeconds: grace,
			}, true
		}
		order, ok := m.Eviction(uid)
		return controllers.PodEviction{
			Failure:            podstatus.Failure{Reason: order.Reason, Message: order.Message},
			GracePeriodSeconds: order.GracePeriodSeconds,
		}, ok
	}
}
