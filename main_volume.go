package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
	"github.com/nodelet/nodelet/internal/resources/userns"
	"github.com/nodelet/nodelet/internal/util/topdir"
	"github.com/nodelet/nodelet/internal/volume"
	"github.com/nodelet/nodelet/internal/volume/csi"
)

// buildVolumes sets up what a pod's containers mount: the volume manager
// (with the CSI plugins its watcher registers from
// <root-dir>/plugins_registry, as the kubelet's plugin watcher does), the
// pods' and their logs' folders, and the user namespaces' ID ranges, read
// back from the pods' folders before any pod runs.
func (n *nodelet) buildVolumes() error {
	opts := n.opts
	n.csiDrivers = csi.NewDrivers()
	n.podVolumes = volume.NewManager(volume.Options{
		CSI:             n.csiDrivers,
		NodeName:        opts.NodeName,
		RootDir:         opts.RootDir,
		HostRoot:        opts.HostRoot,
		NodeAllocatable: nodeAllocatable(n.mgr.GetClient(), opts.NodeName),
		NodeLabels:      nodeLabels(n.mgr.GetClient(), opts.NodeName),
		StatsPeriod:     opts.VolumeStatsPeriod(),
		Recorder:        n.recorder,
	}, n.clientset, n.clock, n.log.WithName("volume"))
	ctrlmetrics.Registry.MustRegister(&kubeletmetrics.VolumeStatsCollector{Claims: n.podVolumes.ClaimVolumeStats, Abnormal: n.podVolumes.ClaimVolumesAbnormal})
	spreadPodFolders(n.log, n.podVolumes.PodsDir(), 0o750)
	spreadPodFolders(n.log, opts.PodLogsDir, 0o755)

	var err error
	n.userNamespaces, err = userns.NewManager(userns.Options{
		MaxPods: int(opts.MaxPods),
		PodDir:  n.podVolumes.PodDir,
		Pods:    n.podVolumes.ListPods,
		Log:     n.log.WithName("userns"),
	})
	if err != nil {
		return err
	}
	csiWatcher := &csi.Watcher{
		Dir:      filepath.Join(opts.RootDir, csi.RegistryDirName),
		Drivers:  n.csiDrivers,
		NodeInfo: &csi.NodeInfo{Client: n.clientset, NodeName: opts.NodeName},
		Clock:    n.clock,
		Log:      n.log.WithName("csi"),
	}
	n.runnables = append(n.runnables, csiWatcher)
	return nil
}

// nodeAllocatable reads the node's allocatable resources from the cached
// Node; nil until the Node is registered.
func nodeAllocatable(cache client.Reader, nodeName string) func(context.Context) corev1.ResourceList {
	return func(ctx context.Context) corev1.ResourceList {
		return cachedNode(ctx, cache, nodeName).Status.Allocatable
	}
}

// nodeLabels reads the Node's labels from the cache, for the persistent
// volumes' nodeAffinity; nil until the Node is registered.
func nodeLabels(cache client.Reader, nodeName string) func(context.Context) map[string]string {
	return func(ctx context.Context) map[string]string {
		return cachedNode(ctx, cache, nodeName).Labels
	}
}

// cachedNode is this node's Node as the cache holds it; an empty one
// until the Node is registered.
func cachedNode(ctx context.Context, cache client.Reader, nodeName string) *corev1.Node {
	node := &corev1.Node{}
	if err := cache.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return &corev1.Node{}
	}
	return node
}

// spreadPodFolders makes dir, a folder that holds one folder per pod (the
// pods' own, their logs'), with mode, and has the file system spread
// those over its disk (package topdir), so that a burst of pods does not
// allocate every inode beside the last burst's freed ones. A folder that
// cannot be made is left to the code that writes in it, which then fails
// with the pod.
func spreadPodFolders(log logr.Logger, dir string, mode os.FileMode) {
	if err := os.MkdirAll(dir, mode); err != nil {
		log.Error(err, "Could not make the pods' folder", "dir", dir)
		return
	}
	marked, err := topdir.Mark(dir)
	if err != nil {
		log.Error(err, "Could not mark the pods' folder as the top of unrelated folders; its file system keeps them close", "dir", dir)
		return
	}
	log.V(1).Info("Marked the pods' folder for spreading", "dir", dir, "marked", marked)
}
