package runtimepod

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodelet/nodelet/internal/resources/cgroups"
)

// WaitForListener is the PID of the process listening on the runtime's
// unix socket, waiting up to timeout for one to listen (at start, the
// runtime's pod may still be pulling its image). The PID is the one in
// nodelet's PID namespace: with the host's PIDs in both pods, the host's.
func WaitForListener(ctx context.Context, socket string, timeout time.Duration) (int, error) {
	var pid int
	var last error
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pid, last = ListenerPID(ctx, socket)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return 0, fmt.Errorf("the runtime's process on %s: %w: %w", socket, err, last)
	}
	if err != nil {
		return 0, fmt.Errorf("the runtime's process on %s: %w", socket, err)
	}
	return pid, nil
}

// ListenerPID connects to the unix socket and reads its listener's PID
// from the connection's peer credentials (SO_PEERCRED): the kernel's, set
// when the listener called listen, which no process can forge.
func ListenerPID(ctx context.Context, socket string) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	raw, err := conn.(*net.UnixConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("SO_PEERCRED on %s: %w", socket, credErr)
	}
	// The kernel gives 0 for a process outside nodelet's PID namespace.
	if cred.Pid <= 0 {
		return 0, errors.New("its process is not in nodelet's PID namespace: both pods need the host's PIDs")
	}
	return int(cred.Pid), nil
}

// PodCgroupOf is the pod cgroup of the process pid (cgroups.PodCgroup of
// its /proc/<pid>/cgroup).
func PodCgroupOf(pid int) (string, error) {
	file := fmt.Sprintf("/proc/%d/cgroup", pid)
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	pod, err := cgroups.PodCgroup(string(data))
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return pod, nil
}
