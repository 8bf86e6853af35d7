package server

// Pressure stall information (PSI) in /stats/summary, as the kubelet
// reports it since its KubeletPSI feature (on for good in v1.36): the
// `psi` of the CPU, memory and IO stats of the node and of each pod, read
// from the kernel's cpu.pressure, memory.pressure and io.pressure of the
// root cgroup and of the pod's cgroup on cgroup v2, and of each container
// where the runtime's stats carry it. Where the kernel keeps none (cgroup
// v1, a kernel without PSI, PSI turned off for a cgroup), `psi` is left
// out, never an error.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Cgroups locates the cgroups whose pressure /stats/summary reports (the
// cgroup manager).
type Cgroups interface {
	// UnifiedRootDir is the folder of the cgroup2 hierarchy's root cgroup,
	// the whole machine's; false without cgroup v2.
	UnifiedRootDir() (dir string, ok bool)
	// UnifiedPodDir is the folder of the pod's cgroup in the cgroup2
	// hierarchy; false without cgroup v2 or without the pod's cgroup.
	UnifiedPodDir(uid types.UID) (dir string, ok bool)
}

// cgroupPressure is one cgroup's pressure by resource, read at a time;
// nil where the kernel keeps none.
type cgroupPressure struct {
	at              time.Time
	cpu, memory, io *statsapi.PSIStats
}

// fillPressure gives the node and the pods of the summary their cgroups'
// pressure, read now. /metrics/resource, which has no PSI, reads none.
func (p *statsProvider) fillPressure(ctx context.Context, summary *statsapi.Summary) {
	if p.cgroups == nil {
		return
	}
	read := func(dir string) cgroupPressure {
		pressure, err := readCgroupPressure(dir, p.clock.Now())
		if err != nil {
			klog.FromContext(ctx).V(1).Info("Left a cgroup's pressure stall information out of the stats", "cgroup", dir, "err", err.Error())
		}
		return pressure
	}
	if dir, ok := p.cgroups.UnifiedRootDir(); ok {
		node := &summary.Node
		setPressure(node.CPU, node.Memory, &node.IO, read(dir))
	}
	for i := range summary.Pods {
		pod := &summary.Pods[i]
		if dir, ok := p.cgroups.UnifiedPodDir(types.UID(pod.PodRef.UID)); ok {
			setPressure(pod.CPU, pod.Memory, &pod.IO, read(dir))
		}
	}
}

// readCgroupPressure reads the pressure files of the cgroup folder dir.
// A file that is not there (a kernel without PSI, or PSI turned off for
// the cgroup through cgroup.pressure) or that the kernel refuses to read
// (ENOTSUP: PSI configured but off, psi=0 on its command line) leaves its
// resource without pressure, and is no error.
func readCgroupPressure(dir string, at time.Time) (cgroupPressure, error) {
	pressure := cgroupPressure{at: at}
	var errs []error
	for _, resource := range []struct {
		file string
		psi  **statsapi.PSIStats
	}{
		{"cpu.pressure", &pressure.cpu},
		{"memory.pressure", &pressure.memory},
		{"io.pressure", &pressure.io},
	} {
		path := filepath.Join(dir, resource.file)
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTSUP) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if *resource.psi, err = parsePSI(data); err != nil {
			errs = append(errs, fmt.Errorf("reading %s: %w", path, err))
		}
	}
	return pressure, errors.Join(errs...)
}

// setPressure puts a cgroup's pressure into its stats. CPU and memory
// pressure go into the readings there are: one made of pressure alone
// would read as a pod without usage. IO pressure is the IO stats, which
// hold nothing else. The cgroup is the kubelet's source (cAdvisor reads
// it); the runtime's reading of it stays only where it has none.
func setPressure(cpu *statsapi.CPUStats, memory *statsapi.MemoryStats, io **statsapi.IOStats, pressure cgroupPressure) {
	if cpu != nil && pressure.cpu != nil {
		cpu.PSI = pressure.cpu
	}
	if memory != nil && pressure.memory != nil {
		memory.PSI = pressure.memory
	}
	if pressure.io != nil {
		*io = &statsapi.IOStats{Time: metav1.NewTime(pressure.at), PSI: pressure.io}
	}
}

// psiStats is the pressure the runtime read; nil when it gives none
// (containerd 1.6 never does). A half it leaves out is zeros, as the
// kubelet takes it.
func psiStats(s *runtimeapi.PsiStats) *statsapi.PSIStats {
	if s == nil {
		return nil
	}
	data := func(d *runtimeapi.PsiData) statsapi.PSIData {
		return statsapi.PSIData{Total: d.GetTotal(), Avg10: d.GetAvg10(), Avg60: d.GetAvg60(), Avg300: d.GetAvg300()}
	}
	return &statsapi.PSIStats{Full: data(s.GetFull()), Some: data(s.GetSome())}
}

// ioStats is the runtime's IO reading, which holds only pressure; nil when
// it gives none.
func ioStats(s *runtimeapi.IoUsage) *statsapi.IOStats {
	if s == nil {
		return nil
	}
	return &statsapi.IOStats{Time: metav1.NewTime(time.Unix(0, s.Timestamp)), PSI: psiStats(s.GetPsi())}
}
