package main

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/controllers"
	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/internal/pod/podstatus"
	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/resources/evictionmanager"
	"github.com/nodelet/nodelet/internal/resources/imagegc"
	"github.com/nodelet/nodelet/internal/volume"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// newEvictionManager is the eviction manager of the options: it reads the
// node's signals every housekeeping interval, frees dead containers and
// unused images under disk pressure, and has the pod reconciler carry out
// its evictions.
func newEvictionManager(opts *options.NodeletServer, c client.Client, runtimeService cri.RuntimeService, imageService cri.ImageManagerService,
	runtimeManager *noderuntime.Manager, volumes *volume.Manager, podCgroups *cgroups.Manager, share machineShare, imageGC *imagegc.Manager, queue *controllers.PodQueue, recorder record.EventRecorder, clk clock.WithTicker, log logr.Logger) (*evictionmanager.Manager, error) {
	config, err := opts.EvictionConfig()
	if err != nil {
		return nil, err
	}
	return evictionmanager.New(c, runtimeService, imageService, evictionmanager.Options{
		Config:              config,
		NodeName:            opts.NodeName,
		MemoryCapacityBytes: share.machine.MemoryBytes,
		MemoryCgroup:        share.memoryCgroup,
		Cgroups:             podCgroups.Hierarchies(),
		RootDir:             opts.RootDir,
		NodeFsShareBytes:    share.nodeFsShareBytes(),
		PIDCgroupDir:        share.pidsCgroupDir,
		MaxPID:              share.machine.MaxPID,
		Containers:          &controllers.ContainerGC{Client: c, Runtime: runtimeManager, Log: log.WithName("containergc")},
		Images:              imageGC,
		LocalStorage: evictionmanager.LocalStorageMeter{
			PodLogDir: func(pod *corev1.Pod) string {
				return noderuntime.PodLogDir(opts.PodLogsDir, pod.Namespace, pod.Name, pod.UID)
			},
			VolumeDir: volumes.LocalVolumeDir,
		}.Measure,
		Enqueue:  queue.Resync,
		Recorder: recorder,
		Clock:    clk,
		Log:      log.WithName("eviction"),
	}), nil
}

// evictionOrders is the eviction manager's orders as the pod reconciler
// takes them.
func evictionOrders(m *evictionmanager.Manager) func(types.UID) (controllers.PodEviction, bool) {
	return func(uid types.UID) (controllers.PodEviction, bool) {
		order, ok := m.Eviction(uid)
		return controllers.PodEviction{
			Failure:            podstatus.Failure{Reason: order.Reason, Message: order.Message},
			GracePeriodSeconds: order.GracePeriodSeconds,
		}, ok
	}
}
