package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRuntimeSocketPath(t *testing.T) {
	tests := map[string]struct {
		endpoint, want, wantErr string
	}{
		"a unix endpoint":    {endpoint: "unix:///run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		"a bare socket path": {endpoint: "/run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		"tcp":                {endpoint: "tcp://127.0.0.1:1234", wantErr: "is not a unix socket"},
		"a relative path":    {endpoint: "unix://containerd.sock", wantErr: "not an absolute unix socket path"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := runtimeSocketPath(tc.endpoint)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("runtimeSocketPath(%q) = %q, %v; want an error containing %q", tc.endpoint, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("runtimeSocketPath(%q) = %q, %v; want %q", tc.endpoint, got, err, tc.want)
			}
		})
	}
}

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
