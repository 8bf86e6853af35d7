package main

// --cgroup-root-in-runtime-pod: a companion node whose container runtime
// runs in a DaemonSet pod of its own, whose cgroup holds the companion's
// pods (see "As a DaemonSet" in the README). nodelet's own pod can then be
// replaced, by an upgrade, without the host's kubelet killing them.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodelet/nodelet/internal/options"
)

// runtimeWaitTimeout bounds the wait for the runtime to listen when
// nodelet starts: both DaemonSets' pods start together, and the runtime's
// may still be pulling its image.
const runtimeWaitTimeout = 5 * time.Minute

// runtimePID is the PID of the process listening on the socket of the
// runtime's endpoint, waiting up to runtimeWaitTimeout for it to listen.
// The PID is the one in nodelet's PID namespace: with the host's PIDs in
// both pods, the host's.
func runtimePID(ctx context.Context, endpoint string) (int, error) {
	socket, err := options.RuntimeSocketPath(endpoint)
	if err != nil {
		return 0, err
	}
	var pid int
	var last error
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, runtimeWaitTimeout, true, func(ctx context.Context) (bool, error) {
		pid, last = peerPID(ctx, socket)
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

// peerPID connects to the unix socket and reads its listener's PID from
// the connection's peer credentials (SO_PEERCRED): the kernel's, set when
// the listener called listen, which no process can forge.
func peerPID(ctx context.Context, socket string) (int, error) {
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
