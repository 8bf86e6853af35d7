package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"
)

// hostStats are the node's own counters, as the kernel keeps them.
type hostStats struct {
	at       time.Time
	bootTime time.Time
	// cpuUsage is the CPU time all the node's CPUs spent busy, in
	// nanoseconds.
	cpuUsage uint64
	// Memory in bytes: the total, what is in use (all but the free
	// pages), and the working set (in use, without the file cache the
	// kernel can drop at once), as cAdvisor reports a node's.
	memoryTotal      uint64
	memoryUsage      uint64
	memoryWorkingSet uint64
}

// userHZ is the unit of /proc/stat's CPU times (USER_HZ), 100 on every
// Linux architecture Kubernetes runs on.
const userHZ = 100

func readHostStats() (hostStats, error) {
	at := time.Now()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostStats{}, err
	}
	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return hostStats{}, err
	}
	return parseHostStats(at, stat, meminfo)
}

// parseHostStats reads /proc/stat (the busy CPU time, the boot time) and
// /proc/meminfo.
func parseHostStats(at time.Time, stat, meminfo []byte) (hostStats, error) {
	h := hostStats{at: at}
	var haveCPU, haveBoot bool
	scanner := bufio.NewScanner(bytes.NewReader(stat))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "cpu":
			// user nice system idle iowait irq softirq steal ...: all but
			// idle and iowait is busy.
			if len(fields) < 9 {
				return h, fmt.Errorf("/proc/stat: short cpu line %q", scanner.Text())
			}
			var busy uint64
			for i, f := range fields[1:9] {
				if i == 3 || i == 4 {
					continue
				}
				v, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					return h, fmt.Errorf("/proc/stat: %w", err)
				}
				busy += v
			}
			h.cpuUsage = busy * uint64(time.Second/userHZ)
			haveCPU = true
		case "btime":
			if len(fields) != 2 {
				continue
			}
			secs, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return h, fmt.Errorf("/proc/stat: %w", err)
			}
			h.bootTime = time.Unix(secs, 0)
			haveBoot = true
		}
	}
	if !haveCPU || !haveBoot {
		return h, errors.New("/proc/stat has no cpu or btime line")
	}

	mem := map[string]uint64{}
	scanner = bufio.NewScanner(bytes.NewReader(meminfo))
	for scanner.Scan() {
		name, rest, ok := strings.Cut(scanner.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		mem[name] = v
	}
	total, ok := mem["MemTotal"]
	if !ok {
		return h, errors.New("/proc/meminfo has no MemTotal")
	}
	h.memoryTotal = total
	h.memoryUsage = total - min(mem["MemFree"], total)
	h.memoryWorkingSet = h.memoryUsage - min(mem["Inactive(file)"], h.memoryUsage)
	return h, nil
}

// fsStats is the size and use of the file system holding path.
func fsStats(path string, at time.Time) (*statsapi.FsStats, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, fmt.Errorf("reading the file system of %s: %w", path, err)
	}
	size := uint64(st.Bsize)
	return &statsapi.FsStats{
		Time:           metav1.NewTime(at),
		AvailableBytes: ptr.To(st.Bavail * size),
		CapacityBytes:  ptr.To(st.Blocks * size),
		UsedBytes:      ptr.To((st.Blocks - st.Bfree) * size),
		InodesFree:     ptr.To(st.Ffree),
		Inodes:         ptr.To(st.Files),
		InodesUsed:     ptr.To(st.Files - st.Ffree),
	}, nil
}
