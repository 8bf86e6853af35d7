package options

import (
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
			got, err := RuntimeSocketPath(tc.endpoint)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("RuntimeSocketPath(%q) = %q, %v; want an error containing %q", tc.endpoint, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("RuntimeSocketPath(%q) = %q, %v; want %q", tc.endpoint, got, err, tc.want)
			}
		})
	}
}
