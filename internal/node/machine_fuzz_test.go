package node

import "testing"

// FuzzParseMachineFiles reads any bytes as /proc/meminfo and os-release:
// a memory size is positive or an error.
func FuzzParseMachineFiles(f *testing.F) {
	f.Add("MemTotal:       16314668 kB\nMemFree: 1 kB\n", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
	f.Add("MemTotal: -5 kB\n", "PRETTY_NAME='x'\n")
	f.Add("MemTotal: 9223372036854775807 kB\n", "PRETTY_NAME=\"unterminated\n")
	f.Add("MemTotal:\n", "")
	f.Fuzz(func(t *testing.T, meminfo, osRelease string) {
		if total, err := parseMemTotal(meminfo); err == nil && total <= 0 {
			t.Errorf("parseMemTotal(%q) = %d, want a positive size or an error", meminfo, total)
		}
		_ = parseOSImage(osRelease)
	})
}
