package evictionmanager

// Reading the eviction signals and the pods' usage from the host and the
// container runtime.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
	"github.com/nodelet/nodelet/internal/resources/eviction"
)

// criPodUIDLabel is the label the kubelet's runtime puts on containers
// with their pod's UID.
const criPodUIDLabel = "io.kubernetes.pod.uid"

// StatsService is what the manager asks the runtime for usage, and which
// containers are running; cri.RuntimeService has it.
type StatsService interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// ImageFsService tells where the runtime keeps its images;
// cri.ImageManagerService has it.
type ImageFsService interface {
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// host is where the node-wide signals are read; tests point it elsewhere.
type host struct {
	procDir string
	// memoryCgroup is the root memory cgroup's folder; memoryUnified is
	// true when it is cgroup v2's.
	memoryCgroup  string
	memoryUnified bool
}

// memoryAvailable is the kubelet's memory.available: the node's capacity
// less the root memory cgroup's working set (eviction.RootMemory).
func (h host) memoryAvailable(capacityBytes int64, now time.Time) (eviction.Observation, error) {
	if h.memoryCgroup == "" {
		return eviction.Observation{}, fmt.Errorf("no memory cgroup hierarchy is mounted")
	}
	data, err := os.ReadFile(filepath.Join(h.memoryCgroup, "memory.stat"))
	if err != nil {
		return eviction.Observation{}, fmt.Errorf("reading the root memory cgroup's counters: %w", err)
	}
	root := eviction.RootMemory{Unified: h.memoryUnified}
	if root.Stat, err = eviction.ParseMemoryStat(data); err != nil {
		return eviction.Observation{}, fmt.Errorf("reading %s: %w", filepath.Join(h.memoryCgroup, "memory.stat"), err)
	}
	usageFile := "memory.usage_in_bytes"
	if h.memoryUnified {
		usageFile = "memory.current"
	}
	data, err = os.ReadFile(filepath.Join(h.memoryCgroup, usageFile))
	switch {
	case err == nil:
		usage, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		if err != nil {
			return eviction.Observation{}, fmt.Errorf("reading %s: %w", filepath.Join(h.memoryCgroup, usageFile), err)
		}
		root.Usage = &usage
	case !h.memoryUnified || !errors.Is(err, fs.ErrNotExist):
		// Only the top of a v2 hierarchy has no usage file.
		return eviction.Observation{}, fmt.Errorf("reading the root memory cgroup's usage: %w", err)
	}
	return eviction.MemoryAvailable(capacityBytes, root.WorkingSet(), now), nil
}

// memoryRoot is the folder of the memory cgroup that holds the node,
// cgroup (the root when empty), in cgroup v1's memory hierarchy where
// there is one (also in the hybrid layout), else in the unified one.
func memoryRoot(hierarchies []cgroups.Hierarchy, cgroup string) (dir string, unified bool) {
	for _, h := range hierarchies {
		if !h.Unified && slices.Contains(h.Controllers, "memory") {
			return filepath.Join(h.MountPoint, cgroup), false
		}
	}
	for _, h := range hierarchies {
		if h.Unified {
			return filepath.Join(h.MountPoint, cgroup), true
		}
	}
	return "", false
}

// pidAvailable is the kubelet's pid.available: pid_max less the threads
// running (the total of /proc/loadavg's runnable/total field).
func (h host) pidAvailable(now time.Time) (eviction.Observation, error) {
	maxData, err := os.ReadFile(h.procDir + "/sys/kernel/pid_max")
	if err != nil {
		return eviction.Observation{}, fmt.Errorf("reading pid_max: %w", err)
	}
	pidMax, err := strconv.ParseInt(strings.TrimSpace(string(maxData)), 10, 64)
	if err != nil {
		return eviction.Observation{}, fmt.Errorf("parsing pid_max: %w", err)
	}
	loadavg, err := os.ReadFile(h.procDir + "/loadavg")
	if err != nil {
		return eviction.Observation{}, fmt.Errorf("reading loadavg: %w", err)
	}
	running, err := parseThreads(loadavg)
	if err != nil {
		return eviction.Observation{}, err
	}
	return eviction.Observation{
		Available: *resource.NewQuantity(pidMax-running, resource.DecimalSI),
		Capacity:  *resource.NewQuantity(pidMax, resource.DecimalSI),
		Time:      now,
	}, nil
}

// readPidsCurrent is a cgroup folder's pids.current: the tasks in it and
// its descendants.
func readPidsCurrent(dir string) (int64, error) {
	data, err := os.ReadFile(filepath.Join(dir, "pids.current"))
	if err != nil {
		return 0, fmt.Errorf("reading the tasks of cgroup %s: %w", dir, err)
	}
	current, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading the tasks of cgroup %s: %w", dir, err)
	}
	return current, nil
}

func parseThreads(loadavg []byte) (int64, error) {
	fields := strings.Fields(string(loadavg))
	if len(fields) < 4 {
		return 0, fmt.Errorf("loadavg %q has no thread count", loadavg)
	}
	_, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return 0, fmt.Errorf("loadavg %q has no thread count", loadavg)
	}
	return strconv.ParseInt(total, 10, 64)
}

// fsObservations are a file system's available bytes and free inodes.
func fsObservations(path string, bytesSignal, inodesSignal eviction.Signal, now time.Time, into eviction.Observations) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("reading the file system of %s: %w", path, err)
	}
	size := int64(st.Bsize)
	into[bytesSignal] = eviction.Observation{
		Available: *resource.NewQuantity(int64(st.Bavail)*size, resource.BinarySI),
		Capacity:  *resource.NewQuantity(int64(st.Blocks)*size, resource.BinarySI),
		Time:      now,
	}
	into[inodesSignal] = eviction.Observation{
		Available: *resource.NewQuantity(int64(st.Ffree), resource.DecimalSI),
		Capacity:  *resource.NewQuantity(int64(st.Files), resource.DecimalSI),
		Time:      now,
	}
	return nil
}

// imageFsMountpoint is where the runtime keeps its images.
func imageFsMountpoint(ctx context.Context, images ImageFsService) (string, error) {
	resp, err := images.ImageFsInfo(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the runtime's image file system: %w", err)
	}
	for _, fs := range resp.GetImageFilesystems() {
		if mp := fs.GetFsId().GetMountpoint(); mp != "" {
			return mp, nil
		}
	}
	return "", fmt.Errorf("the runtime reports no image file system")
}

// podUsage is the pods' usage from the runtime's container stats: each
// running container's working set and writable layer, summed per pod
// (eviction.PodUsageOf says why dead instances do not count). Stats are
// listed first: a container started in between counts from the next
// round, one that died in between no longer counts.
func podUsage(ctx context.Context, stats StatsService) (eviction.Usage, error) {
	list, err := stats.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing container stats: %w", err)
	}
	running, err := stats.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, fmt.Errorf("listing running containers: %w", err)
	}
	isRunning := make(map[string]bool, len(running))
	for _, c := range running {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			isRunning[c.GetId()] = true
		}
	}
	instances := make([]eviction.ContainerStats, 0, len(list))
	for _, s := range list {
		uid := types.UID(s.GetAttributes().GetLabels()[criPodUIDLabel])
		if uid == "" {
			continue
		}
		c := eviction.ContainerStats{PodUID: uid, Name: s.GetAttributes().GetMetadata().GetName(), Running: isRunning[s.GetAttributes().GetId()]}
		if ws := s.GetMemory().GetWorkingSetBytes(); ws != nil {
			c.Memory = resource.NewQuantity(int64(ws.GetValue()), resource.BinarySI)
		}
		if used := s.GetWritableLayer().GetUsedBytes(); used != nil {
			c.WritableLayer = resource.NewQuantity(int64(used.GetValue()), resource.BinarySI)
		}
		if inodes := s.GetWritableLayer().GetInodesUsed(); inodes != nil {
			c.WritableLayerInodes = resource.NewQuantity(int64(inodes.GetValue()), resource.DecimalSI)
		}
		instances = append(instances, c)
	}
	return eviction.PodUsageOf(instances), nil
}
