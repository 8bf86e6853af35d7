package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestPeerPID listens on a real unix socket in this process: the peer
// credentials name its PID, as they name the runtime's.
func TestPeerPID(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "runtime.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	pid, err := peerPID(t.Context(), socket)
	if err != nil || pid != os.Getpid() {
		t.Errorf("peerPID(%s) = %d, %v; want this process's %d", socket, pid, err, os.Getpid())
	}
	if _, err := peerPID(t.Context(), filepath.Join(t.TempDir(), "none.sock")); err == nil {
		t.Error("peerPID of a socket nobody listens on: no error")
	}
}
