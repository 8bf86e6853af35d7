package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// statsProvider builds the node's stats summary from the runtime's stats
// (CRI ListPodSandboxStats and ListContainerStats, which the runtime reads
// from each pod's cgroup), the host's own counters and the pressure files
// of the root's and the pods' cgroups.
type statsProvider struct {
	nodeName string
	rootDir  string
	runtime  cri.RuntimeService
	images   cri.ImageManagerService
	clock    clock.PassiveClock
	// host reads the node's own counters; replaced in tests.
	host func() (hostStats, error)
	// volumes measures the pods' volumes; nil reports none.
	volumes VolumeStats
	// cgroups locates the cgroups whose pressure the summary reports; nil
	// reports none.
	cgroups Cgroups

	mu sync.Mutex
	// cpu is the last cumulative CPU usage seen of each sandbox, container
	// and of the node, to turn two readings into a rate: runtimes such as
	// containerd 1.6 report the cumulative usage only.
	cpu map[string]cpuReading
}

type cpuReading struct {
	at    int64 // unix nanoseconds
	usage uint64
}

// nodeCPUKey is the node's entry among the CPU readings.
const nodeCPUKey = "/node"

func newStatsProvider(nodeName, rootDir string, runtime cri.RuntimeService, images cri.ImageManagerService, clk clock.PassiveClock) *statsProvider {
	return &statsProvider{
		nodeName: nodeName,
		rootDir:  rootDir,
		runtime:  runtime,
		images:   images,
		clock:    clk,
		host:     readHostStats,
		cpu:      map[string]cpuReading{},
	}
}

// VolumeStats measures the usage of pods' volumes (the volume manager).
type VolumeStats interface {
	// PodVolumeStats is the usage of each pod's volumes, by pod UID.
	PodVolumeStats(ctx context.Context) map[types.UID][]statsapi.VolumeStats
}

func (s *Server) serveStatsSummary(w http.ResponseWriter, r *http.Request) {
	summary, err := s.stats.summary(r.Context())
	if err != nil {
		klog.FromContext(r.Context()).Error(err, "Failed to collect the stats summary")
		http.Error(w, fmt.Sprintf("Internal Error: %v", err), http.StatusInternalServerError)
		return
	}
	// Only here: /metrics/resource, which metrics-server scrapes often,
	// reads no volumes and no pressure files.
	if s.stats.volumes != nil {
		setVolumeStats(summary.Pods, s.stats.volumes.PodVolumeStats(r.Context()))
	}
	s.stats.fillPressure(r.Context(), summary)
	writeJSON(w, r, summary)
}

// setVolumeStats gives each pod of the summary the stats of its volumes.
func setVolumeStats(pods []statsapi.PodStats, byUID map[types.UID][]statsapi.VolumeStats) {
	for i := range pods {
		pods[i].VolumeStats = byUID[types.UID(pods[i].PodRef.UID)]
	}
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(data); err != nil {
		klog.FromContext(r.Context()).V(1).Info("Failed to write a response", "err", err.Error())
	}
}

// summary collects the whole summary: the node, then every running pod
// with its running containers.
func (p *statsProvider) summary(ctx context.Context) (*statsapi.Summary, error) {
	node, err := p.nodeStats(ctx)
	if err != nil {
		return nil, err
	}
	sandboxes, err := p.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return nil, fmt.Errorf("listing pod sandboxes: %w", err)
	}
	containers, err := p.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	// One ready sandbox at a time: containerd 1.6 fails the whole list
	// for one stopped sandbox whose cgroup is gone (a finished pod kept
	// for its logs), and a sandbox stopping meanwhile fails its own call.
	var sandboxStats []*runtimeapi.PodSandboxStats
	for _, sb := range sandboxes {
		stats, err := p.runtime.PodSandboxStats(ctx, sb.Id)
		if err != nil {
			klog.FromContext(ctx).V(1).Info("Left a pod's own stats out of the summary", "sandbox", sb.Id, "err", err.Error())
			continue
		}
		sandboxStats = append(sandboxStats, stats)
	}
	containerStats, err := p.runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		// containerd fails the whole list for one container removed while
		// it lists (NotFound, "failed to decode container metrics"): each
		// running container is then asked alone, and one that is gone is
		// left out, as its sandbox's own stats are above.
		klog.FromContext(ctx).V(1).Info("Reading the containers' stats one at a time", "err", err.Error())
		containerStats = p.eachContainerStats(ctx, containers)
	}
	pods := podStatsFromCRI(sandboxes, containers, sandboxStats, containerStats)
	p.fillRates(node, pods)
	p.fillLogUsage(ctx, pods, containers)
	return &statsapi.Summary{Node: *node, Pods: pods}, nil
}

// eachContainerStats reads the stats of each of containers alone, leaving
// out those the runtime no longer has.
func (p *statsProvider) eachContainerStats(ctx context.Context, containers []*runtimeapi.Container) []*runtimeapi.ContainerStats {
	var all []*runtimeapi.ContainerStats
	for _, c := range containers {
		stats, err := p.runtime.ContainerStats(ctx, c.Id)
		if err != nil {
			klog.FromContext(ctx).V(1).Info("Left a container's stats out of the summary", "container", c.Id, "err", err.Error())
			continue
		}
		all = append(all, stats)
	}
	return all
}

// podStatsFromCRI puts together the stats of every ready sandbox of
// nodelet's with those of its running containers.
func podStatsFromCRI(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, sandboxStats []*runtimeapi.PodSandboxStats, containerStats []*runtimeapi.ContainerStats) []statsapi.PodStats {
	bySandbox := map[string]*runtimeapi.PodSandboxStats{}
	for _, s := range sandboxStats {
		bySandbox[s.GetAttributes().GetId()] = s
	}
	statsByContainer := map[string]*runtimeapi.ContainerStats{}
	for _, s := range containerStats {
		statsByContainer[s.GetAttributes().GetId()] = s
	}
	containersBySandbox := map[string][]*runtimeapi.Container{}
	for _, c := range containers {
		containersBySandbox[c.PodSandboxId] = append(containersBySandbox[c.PodSandboxId], c)
	}

	pods := []statsapi.PodStats{}
	for _, sb := range sandboxes {
		md := sb.GetMetadata()
		if sb.Labels[kubecontainer.LabelPodUID] == "" {
			continue
		}
		pod := statsapi.PodStats{
			PodRef:     statsapi.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()},
			StartTime:  metav1.NewTime(time.Unix(0, sb.CreatedAt)),
			Containers: []statsapi.ContainerStats{},
		}
		if s := bySandbox[sb.Id]; s != nil {
			pod.CPU = cpuStats(s.GetLinux().GetCpu())
			pod.Memory = memoryStats(s.GetLinux().GetMemory())
			pod.Network = networkStats(s.GetLinux().GetNetwork())
			pod.IO = ioStats(s.GetLinux().GetIo())
			if pod.Network != nil && pod.Network.Time.IsZero() && pod.CPU != nil {
				// containerd 1.6 leaves the network reading's time out:
				// it is read with the rest.
				pod.Network.Time = pod.CPU.Time
			}
			if n := s.GetLinux().GetProcess().GetProcessCount(); n != nil {
				pod.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr.To(n.Value)}
			}
		}
		cs := containersBySandbox[sb.Id]
		sort.Slice(cs, func(i, j int) bool { return cs[i].GetMetadata().GetName() < cs[j].GetMetadata().GetName() })
		for _, c := range cs {
			container := statsapi.ContainerStats{
				Name:      c.GetMetadata().GetName(),
				StartTime: metav1.NewTime(time.Unix(0, c.CreatedAt)),
			}
			if s := statsByContainer[c.Id]; s != nil {
				container.CPU = cpuStats(s.GetCpu())
				container.Memory = memoryStats(s.GetMemory())
				container.IO = ioStats(s.GetIo())
				if layer := s.GetWritableLayer(); layer != nil {
					container.Rootfs = &statsapi.FsStats{
						Time:       metav1.NewTime(time.Unix(0, layer.Timestamp)),
						UsedBytes:  value(layer.GetUsedBytes()),
						InodesUsed: value(layer.GetInodesUsed()),
					}
				}
			}
			pod.Containers = append(pod.Containers, container)
		}
		// A runtime without pod-level stats: the pod is the sum of its
		// containers.
		if pod.CPU == nil {
			pod.CPU = sumCPU(pod.Containers)
		}
		if pod.Memory == nil {
			pod.Memory = sumMemory(pod.Containers)
		}
		pods = append(pods, pod)
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].PodRef.Namespace != pods[j].PodRef.Namespace {
			return pods[i].PodRef.Namespace < pods[j].PodRef.Namespace
		}
		return pods[i].PodRef.Name < pods[j].PodRef.Name
	})
	return pods
}

func value(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptr.To(v.Value)
}

func cpuStats(s *runtimeapi.CpuUsage) *statsapi.CPUStats {
	if s == nil {
		return nil
	}
	cpu := &statsapi.CPUStats{
		Time:                 metav1.NewTime(time.Unix(0, s.Timestamp)),
		UsageCoreNanoSeconds: value(s.GetUsageCoreNanoSeconds()),
		PSI:                  psiStats(s.GetPsi()),
	}
	// Runtimes that do not compute a rate (containerd 1.6) send zero.
	if n := s.GetUsageNanoCores(); n != nil && n.Value > 0 {
		cpu.UsageNanoCores = ptr.To(n.Value)
	}
	return cpu
}

func memoryStats(s *runtimeapi.MemoryUsage) *statsapi.MemoryStats {
	if s == nil {
		return nil
	}
	m := &statsapi.MemoryStats{
		Time:            metav1.NewTime(time.Unix(0, s.Timestamp)),
		UsageBytes:      value(s.GetUsageBytes()),
		WorkingSetBytes: value(s.GetWorkingSetBytes()),
		RSSBytes:        value(s.GetRssBytes()),
		PageFaults:      value(s.GetPageFaults()),
		MajorPageFaults: value(s.GetMajorPageFaults()),
		PSI:             psiStats(s.GetPsi()),
	}
	if a := s.GetAvailableBytes(); a != nil && a.Value > 0 {
		m.AvailableBytes = ptr.To(a.Value)
	}
	return m
}

func networkStats(s *runtimeapi.NetworkUsage) *statsapi.NetworkStats {
	if s == nil || s.GetDefaultInterface() == nil {
		return nil
	}
	iface := func(i *runtimeapi.NetworkInterfaceUsage) statsapi.InterfaceStats {
		return statsapi.InterfaceStats{
			Name:     i.GetName(),
			RxBytes:  value(i.GetRxBytes()),
			RxErrors: value(i.GetRxErrors()),
			TxBytes:  value(i.GetTxBytes()),
			TxErrors: value(i.GetTxErrors()),
		}
	}
	n := &statsapi.NetworkStats{InterfaceStats: iface(s.GetDefaultInterface())}
	if s.Timestamp != 0 {
		n.Time = metav1.NewTime(time.Unix(0, s.Timestamp))
	}
	for _, i := range s.GetInterfaces() {
		n.Interfaces = append(n.Interfaces, iface(i))
	}
	return n
}

func sumCPU(containers []statsapi.ContainerStats) *statsapi.CPUStats {
	var sum *statsapi.CPUStats
	for _, c := range containers {
		if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil {
			continue
		}
		if sum == nil {
			sum = &statsapi.CPUStats{Time: c.CPU.Time, UsageCoreNanoSeconds: ptr.To[uint64](0)}
		}
		*sum.UsageCoreNanoSeconds += *c.CPU.UsageCoreNanoSeconds
		if c.CPU.Time.After(sum.Time.Time) {
			sum.Time = c.CPU.Time
		}
	}
	return sum
}

func sumMemory(containers []statsapi.ContainerStats) *statsapi.MemoryStats {
	var sum *statsapi.MemoryStats
	for _, c := range containers {
		if c.Memory == nil || c.Memory.WorkingSetBytes == nil {
			continue
		}
		if sum == nil {
			sum = &statsapi.MemoryStats{Time: c.Memory.Time, WorkingSetBytes: ptr.To[uint64](0), UsageBytes: ptr.To[uint64](0)}
		}
		*sum.WorkingSetBytes += *c.Memory.WorkingSetBytes
		if c.Memory.UsageBytes != nil {
			*sum.UsageBytes += *c.Memory.UsageBytes
		}
	}
	return sum
}

// fillRates sets UsageNanoCores where the runtime gave none, from the
// change of the cumulative usage since the last summary (as the kubelet
// does with CRI stats), and forgets what no longer runs. The first
// summary after a pod starts has no rate for it yet.
func (p *statsProvider) fillRates(node *statsapi.NodeStats, pods []statsapi.PodStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	rate := func(key string, cpu *statsapi.CPUStats) {
		if cpu == nil || cpu.UsageCoreNanoSeconds == nil {
			return
		}
		seen[key] = true
		now := cpuReading{at: cpu.Time.UnixNano(), usage: *cpu.UsageCoreNanoSeconds}
		last, ok := p.cpu[key]
		if ok && now.at <= last.at {
			// Nothing new since the last reading: keep its rate base.
			now = last
		} else {
			p.cpu[key] = now
		}
		if cpu.UsageNanoCores != nil {
			return
		}
		if rate, ok := cpuRate(last, now, ok); ok {
			cpu.UsageNanoCores = ptr.To(rate)
		}
	}
	rate(nodeCPUKey, node.CPU)
	for i := range pods {
		podKey := "pod/" + pods[i].PodRef.UID
		rate(podKey, pods[i].CPU)
		for j := range pods[i].Containers {
			rate(podKey+"/"+pods[i].Containers[j].Name+"@"+pods[i].Containers[j].StartTime.String(), pods[i].Containers[j].CPU)
		}
	}
	for key := range p.cpu {
		if !seen[key] {
			delete(p.cpu, key)
		}
	}
}

// cpuRate is the CPU used between two readings, in nanocores.
func cpuRate(last, now cpuReading, haveLast bool) (uint64, bool) {
	if !haveLast || now.at <= last.at || now.usage < last.usage {
		return 0, false
	}
	return uint64(float64(now.usage-last.usage) / float64(now.at-last.at) * float64(time.Second)), true
}

// fillLogUsage sets how much disk each container's logs take: its live
// log file and those rotated from it.
func (p *statsProvider) fillLogUsage(ctx context.Context, pods []statsapi.PodStats, containers []*runtimeapi.Container) {
	type key struct{ uid, name string }
	ids := map[key]string{}
	for _, c := range containers {
		ids[key{c.Labels[kubecontainer.LabelPodUID], c.GetMetadata().GetName()}] = c.Id
	}
	for i := range pods {
		for j := range pods[i].Containers {
			c := &pods[i].Containers[j]
			id := ids[key{pods[i].PodRef.UID, c.Name}]
			if id == "" {
				continue
			}
			resp, err := p.runtime.ContainerStatus(ctx, id, false)
			if err != nil || resp.GetStatus().GetLogPath() == "" {
				continue
			}
			path := resp.GetStatus().GetLogPath()
			files, _ := filepath.Glob(path + ".*")
			var used uint64
			for _, f := range append(files, path) {
				if info, err := os.Stat(f); err == nil {
					used += uint64(info.Size())
				}
			}
			c.Logs = &statsapi.FsStats{Time: metav1.NewTime(p.clock.Now()), UsedBytes: ptr.To(used)}
		}
	}
}

// nodeStats reads the node's own counters and file systems.
func (p *statsProvider) nodeStats(ctx context.Context) (*statsapi.NodeStats, error) {
	host, err := p.host()
	if err != nil {
		return nil, fmt.Errorf("reading the node's stats: %w", err)
	}
	now := metav1.NewTime(host.at)
	node := &statsapi.NodeStats{
		NodeName:  p.nodeName,
		StartTime: metav1.NewTime(host.bootTime),
		CPU:       &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: ptr.To(host.cpuUsage)},
		Memory: &statsapi.MemoryStats{
			Time:            now,
			AvailableBytes:  ptr.To(host.memoryTotal - host.memoryWorkingSet),
			UsageBytes:      ptr.To(host.memoryUsage),
			WorkingSetBytes: ptr.To(host.memoryWorkingSet),
		},
	}
	if fs, err := fsStats(p.rootDir, p.clock.Now()); err == nil {
		node.Fs = fs
	}
	if p.images != nil {
		if imageFs, err := p.imageFsStats(ctx); err == nil {
			node.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs}
		} else {
			klog.FromContext(ctx).V(1).Info("Left the image file system out of the stats", "err", err.Error())
		}
	}
	return node, nil
}

// imageFsStats is the runtime's image file system: what its images use,
// and the size of the file system holding them.
func (p *statsProvider) imageFsStats(ctx context.Context) (*statsapi.FsStats, error) {
	resp, err := p.images.ImageFsInfo(ctx)
	if err != nil {
		return nil, err
	}
	if len(resp.GetImageFilesystems()) == 0 {
		return nil, fmt.Errorf("the runtime reports no image file system")
	}
	fsInfo := resp.GetImageFilesystems()[0]
	fs, err := fsStats(fsInfo.GetFsId().GetMountpoint(), time.Unix(0, fsInfo.Timestamp))
	if err != nil {
		return nil, err
	}
	fs.UsedBytes = value(fsInfo.GetUsedBytes())
	fs.InodesUsed = value(fsInfo.GetInodesUsed())
	return fs, nil
}
