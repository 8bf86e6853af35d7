package node

// The machine-fact parsers, tested as pure functions, and the reading of
// the real host's facts.

import (
	"net"
	"path/filepath"
	"testing"
)

func TestPickNodeIP(t *testing.T) {
	ips := func(s ...string) []net.IP {
		var out []net.IP
		for _, ip := range s {
			out = append(out, net.ParseIP(ip))
		}
		return out
	}
	tests := map[string]struct {
		ips  []net.IP
		want string
	}{
		"the first global IPv4 address, past loopback and IPv6": {ips: ips("127.0.0.1", "::1", "fd00::2", "fe80::1", "192.0.2.2", "192.0.2.3"), want: "192.0.2.2"},
		"a global IPv6 address when there is no IPv4 one":       {ips: ips("127.0.0.1", "fe80::1", "fd00::2"), want: "fd00::2"},
		"loopback when it is all there is":                      {ips: ips("127.0.0.1", "::1"), want: "127.0.0.1"},
		"a link-local IPv4 address is no node address":          {ips: ips("169.254.3.4", "127.0.0.1"), want: "127.0.0.1"},
		"no address at all":                                     {ips: nil, want: "<nil>"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := pickNodeIP(tc.ips).String(); got != tc.want {
				t.Errorf("pickNodeIP() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestParseMemTotal(t *testing.T) {
	got, err := parseMemTotal("MemTotal:       24684092 kB\nMemFree:        1000 kB\n")
	if err != nil || got != 24684092*1024 {
		t.Errorf("parseMemTotal() = %d, %v; want %d", got, err, 24684092*1024)
	}
	if _, err := parseMemTotal("MemFree: 1000 kB\n"); err == nil {
		t.Error("parseMemTotal() without MemTotal succeeded, want an error")
	}
}

func TestParseOSImage(t *testing.T) {
	tests := map[string]struct{ osRelease, want string }{
		"double quotes": {osRelease: "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", want: "Debian GNU/Linux 12 (bookworm)"},
		"single quotes": {osRelease: "PRETTY_NAME='Alpine Linux v3.19'\n", want: "Alpine Linux v3.19"},
		"no quotes":     {osRelease: "PRETTY_NAME=Plain\n", want: "Plain"},
		"missing":       {osRelease: "NAME=Debian\n", want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := parseOSImage(tc.osRelease); got != tc.want {
				t.Errorf("parseOSImage() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadMachineInfo(t *testing.T) {
	info, err := ReadMachineInfo(filepath.Join(t.TempDir(), "not", "made", "yet"))
	if err != nil {
		t.Fatalf("ReadMachineInfo() error = %v", err)
	}
	if info.MilliCPUs < 1000 || info.MemoryBytes <= 0 || info.EphemeralStorageBytes <= 0 || info.KernelVersion == "" || info.OSImage == "" || info.MaxPID <= 0 {
		t.Errorf("ReadMachineInfo() = %+v, want CPUs, memory, storage, kernel, OS image and PID limit", info)
	}
}
