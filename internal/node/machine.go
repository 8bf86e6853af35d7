package node

// The machine's facts, read from the host: /proc, /sys, /etc, statfs and
// the network interfaces.

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
)

// MachineInfo is what the Node reports about the machine.
type MachineInfo struct {
	// MilliCPUs is the CPU in thousandths of a CPU: a companion node's
	// share of the machine (MachineInfo.Within) need not be whole CPUs.
	MilliCPUs             int64
	MemoryBytes           int64
	EphemeralStorageBytes int64
	KernelVersion         string
	OSImage               string
	OperatingSystem       string
	Architecture          string
	// MachineID, SystemUUID and BootID are empty when unreadable.
	MachineID  string
	SystemUUID string
	BootID     string
	// MaxPID is how many processes the host allows, the smaller of
	// pid_max and threads-max as the kubelet reads it; 0 when unreadable.
	MaxPID int64
}

// ReadMachineInfo reads the machine's facts from the host; the
// ephemeral-storage capacity is the size of the file system holding
// rootDir (or its nearest existing parent).
func ReadMachineInfo(rootDir string) (MachineInfo, error) {
	info := MachineInfo{
		MilliCPUs:       int64(goruntime.NumCPU()) * 1000,
		OperatingSystem: goruntime.GOOS,
		Architecture:    goruntime.GOARCH,
		MachineID:       readMachineFile("/etc/machine-id"),
		SystemUUID:      readMachineFile("/sys/class/dmi/id/product_uuid"),
		BootID:          readMachineFile("/proc/sys/kernel/random/boot_id"),
		KernelVersion:   readMachineFile("/proc/sys/kernel/osrelease"),
	}

	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return MachineInfo{}, fmt.Errorf("reading the memory size: %w", err)
	}
	if info.MemoryBytes, err = parseMemTotal(string(meminfo)); err != nil {
		return MachineInfo{}, fmt.Errorf("reading the memory size: %w", err)
	}

	osRelease, err := os.ReadFile("/etc/os-release")
	if errors.Is(err, os.ErrNotExist) {
		osRelease, err = os.ReadFile("/usr/lib/os-release")
	}
	if err == nil {
		info.OSImage = parseOSImage(string(osRelease))
	}
	if info.OSImage == "" {
		info.OSImage = "Linux"
	}

	for _, file := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		if limit, err := strconv.ParseInt(readMachineFile(file), 10, 64); err == nil && (info.MaxPID == 0 || limit < info.MaxPID) {
			info.MaxPID = limit
		}
	}

	if info.EphemeralStorageBytes, err = fileSystemSize(rootDir); err != nil {
		return MachineInfo{}, fmt.Errorf("reading the size of the file system holding %s: %w", rootDir, err)
	}
	return info, nil
}

func readMachineFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// parseMemTotal reads MemTotal out of /proc/meminfo, in bytes.
func parseMemTotal(meminfo string) (int64, error) {
	scanner := bufio.NewScanner(strings.NewReader(meminfo))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 2 || fields[0] != "MemTotal:" {
			continue
		}
		kib, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed MemTotal line %q: %w", scanner.Text(), err)
		}
		if kib <= 0 || kib > math.MaxInt64/1024 {
			return 0, fmt.Errorf("malformed MemTotal line %q: not a memory size", scanner.Text())
		}
		return kib * 1024, nil
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

// parseOSImage reads PRETTY_NAME out of an os-release file.
func parseOSImage(osRelease string) string {
	for _, line := range strings.Split(osRelease, "\n") {
		value, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if unquoted, err := strconv.Unquote(value); err == nil {
			return unquoted
		}
		return strings.Trim(value, `'"`)
	}
	return ""
}

func fileSystemSize(dir string) (int64, error) {
	for {
		var fs syscall.Statfs_t
		err := syscall.Statfs(dir, &fs)
		if err == nil {
			return int64(fs.Blocks) * int64(fs.Bsize), nil
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, syscall.ENOENT) || parent == dir {
			return 0, err
		}
		dir = parent
	}
}

// hostInterfaceIPs lists the addresses of the host's interfaces that are up.
func hostInterfaceIPs() ([]net.IP, error) {
	interfaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, iface := range interfaces {
		if iface.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return nil, err
		}
		for _, addr := range addrs {
			if ipNet, ok := addr.(*net.IPNet); ok {
				ips = append(ips, ipNet.IP)
			}
		}
	}
	return ips, nil
}

// pickNodeIP chooses the node's address: the first global IPv4 one, else
// the first global IPv6 one, else the first loopback one.
func pickNodeIP(ips []net.IP) net.IP {
	var firstV6, firstLoopback net.IP
	for _, ip := range ips {
		switch {
		case ip.IsLoopback():
			if firstLoopback == nil {
				firstLoopback = ip
			}
		case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified():
		case ip.To4() != nil:
			return ip
		case firstV6 == nil:
			firstV6 = ip
		}
	}
	if firstV6 != nil {
		return firstV6
	}
	return firstLoopback
}
