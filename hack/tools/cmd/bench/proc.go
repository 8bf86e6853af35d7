package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux architecture Go builds for.
const clockTicks = 100

// cpuSeconds returns the CPU time process pid has used, user and system,
// its reaped children's included (a node agent runs mount and friends).
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	return parseStatCPU(data)
}

// parseStatCPU sums utime, stime, cutime and cstime (fields 14 to 17) of a
// /proc/PID/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from its closing parenthesis.
func parseStatCPU(stat []byte) (float64, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in /proc stat line %q", stat)
	}
	// After ") " come field 3 (state) onwards.
	fields := strings.Fields(string(stat[end+1:]))
	const first = 14 - 3
	if len(fields) < first+4 {
		return 0, fmt.Errorf("short /proc stat line %q", stat)
	}
	var ticks int64
	for _, field := range fields[first : first+4] {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q in /proc stat line: %w", field, err)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

// cpuBusy is CPU time spent busy since boot: the machine's, summed over
// its CPUs, and the node's, summed over the CPUs the bench confined the
// node to (none: zero). Over a burst the machine's is what every process
// together used (agent, runtime, shims, control plane), which on a small
// machine bounds how fast the burst can go; the node's leaves out the
// control plane when it runs on other CPUs, as in a cluster.
type cpuBusy struct {
	machine, node float64
}

func readCPUBusy(nodeCPUs []int) (cpuBusy, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuBusy{}, fmt.Errorf("reading the machine's CPU time: %w", err)
	}
	return parseCPUBusy(data, nodeCPUs)
}

// since is the CPU time spent busy from start to b.
func (b cpuBusy) since(start cpuBusy) cpuBusy {
	return cpuBusy{machine: b.machine - start.machine, node: b.node - start.node}
}

// parseCPUBusy reads /proc/stat's "cpu" line and the "cpuN" line of each
// node CPU. Each has user, nice, system, idle, iowait, irq, softirq, steal
// (guest and guest_nice are already counted in user and nice), in USER_HZ.
func parseCPUBusy(stat []byte, nodeCPUs []int) (cpuBusy, error) {
	wanted := map[string]bool{}
	for _, cpu := range nodeCPUs {
		wanted[fmt.Sprintf("cpu%d", cpu)] = true
	}
	var busy cpuBusy
	machineSeen, nodeSeen := false, 0
	for _, line := range strings.Split(string(stat), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || (fields[0] != "cpu" && !wanted[fields[0]]) {
			continue
		}
		seconds, err := busySeconds(fields)
		if err != nil {
			return cpuBusy{}, err
		}
		if fields[0] == "cpu" {
			busy.machine, machineSeen = seconds, true
		} else {
			busy.node += seconds
			nodeSeen++
		}
	}
	if !machineSeen {
		return cpuBusy{}, fmt.Errorf("no cpu line in /proc/stat: %.40q", stat)
	}
	if nodeSeen != len(wanted) {
		return cpuBusy{}, fmt.Errorf("/proc/stat has %d of the node's CPUs %v", nodeSeen, nodeCPUs)
	}
	return busy, nil
}

// busySeconds sums a /proc/stat CPU line's times but idle and iowait.
func busySeconds(fields []string) (float64, error) {
	if len(fields) < 9 {
		return 0, fmt.Errorf("short CPU line in /proc/stat: %q", strings.Join(fields, " "))
	}
	var busy int64
	for i, field := range fields[1:9] {
		n, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q in /proc/stat: %w", field, err)
		}
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += n
	}
	return float64(busy) / clockTicks, nil
}

// resetPeakRSS makes process pid's VmHWM start again from its current RSS
// (writing 5 to clear_refs, Linux 4.0 on), so a later peakRSS is the peak of
// the window in between.
func resetPeakRSS(pid int) error {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak RSS of process %d: %w", pid, err)
	}
	return nil
}

// peakRSS returns process pid's VmHWM in bytes.
func peakRSS(pid int) (uint64, error) {
	file, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the peak RSS of process %d: %w", pid, err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "VmHWM:"); ok {
			return parseKB(rest)
		}
	}
	if err := scanner.Err(); err != nil {
		return 0, fmt.Errorf("reading the peak RSS of process %d: %w", pid, err)
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// parseKB reads a /proc value such as "  123456 kB" into bytes.
func parseKB(value string) (uint64, error) {
	fields := strings.Fields(value)
	if len(fields) != 2 || fields[1] != "kB" {
		return 0, fmt.Errorf("unexpected /proc size %q", value)
	}
	kb, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("unexpected /proc size %q: %w", value, err)
	}
	return kb * 1024, nil
}

// readPIDFile returns the PID a daemon's pidfile holds, checking that the
// process is alive.
func readPIDFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading pidfile: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("pidfile %s: %w", path, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return 0, fmt.Errorf("process %d of pidfile %s: %w", pid, path, err)
	}
	return pid, nil
}

// loadAverage returns the one-minute load average.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return -1
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return -1
	}
	return load
}

// procUsage is what one process used in a window of the bench.
type procUsage struct {
	CPUSeconds   float64 `json:"cpuSeconds"`
	PeakRSSBytes uint64  `json:"peakRSSBytes"`
}

// usageMeter measures a process over a window: start resets its peak RSS
// and notes its CPU time, stop reads both.
type usageMeter struct {
	pid      int
	cpuStart float64
}

func startUsage(pid int) (*usageMeter, error) {
	if err := resetPeakRSS(pid); err != nil {
		return nil, err
	}
	cpu, err := cpuSeconds(pid)
	if err != nil {
		return nil, err
	}
	return &usageMeter{pid: pid, cpuStart: cpu}, nil
}

// startRuntimeUsage meters agent a's containerd (its own process, not its
// shims).
func startRuntimeUsage(a *agent) (*usageMeter, error) {
	pid, err := readPIDFile(a.containerdPIDFile())
	if err != nil {
		return nil, fmt.Errorf("%s's containerd: %w", a.Name, err)
	}
	return startUsage(pid)
}

func (m *usageMeter) stop() (procUsage, error) {
	cpu, err := cpuSeconds(m.pid)
	if err != nil {
		return procUsage{}, err
	}
	rss, err := peakRSS(m.pid)
	if err != nil {
		return procUsage{}, err
	}
	return procUsage{CPUSeconds: cpu - m.cpuStart, PeakRSSBytes: rss}, nil
}
