package cgroups

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseMountInfo reads any bytes as /proc/self/mountinfo: an error or
// hierarchies each kept once, a v1 one with its controllers sorted.
func FuzzParseMountInfo(f *testing.F) {
	for _, seed := range []string{
		"35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n",
		"25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw shared:8 - cgroup cgroup rw,cpuacct,cpu\n26 24 0:23 / /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n27 24 0:24 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
		"1 2 3 4 /a\\04 6 - cgroup x y\n",
		"garbage\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hierarchies, err := parseMountInfo(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		unified := 0
		var keys []string
		for _, h := range hierarchies {
			if h.Unified {
				unified++
				continue
			}
			if len(h.Controllers) == 0 || !slices.IsSorted(h.Controllers) {
				t.Errorf("v1 hierarchy %+v without sorted controllers", h)
			}
			key := strings.Join(h.Controllers, ",")
			if slices.Contains(keys, key) {
				t.Errorf("v1 hierarchy %s kept twice", key)
			}
			keys = append(keys, key)
		}
		if unified > 1 {
			t.Errorf("%d cgroup2 hierarchies kept", unified)
		}
	})
}
