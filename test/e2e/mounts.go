package e2e

import (
	"fmt"
	"os"
	"strings"
)

// NodeMount is one line of the node's mount table.
type NodeMount struct{ Point, FSType string }

// NodeMounts reads the node's mount table: this process's, which is the
// node's, as the suites run on the node.
func NodeMounts() ([]NodeMount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var mounts []NodeMount
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		for i := 6; i+1 < len(fields); i++ {
			if fields[i] == "-" {
				mounts = append(mounts, NodeMount{Point: unescapeMountPath(fields[4]), FSType: fields[i+1]})
				break
			}
		}
	}
	return mounts, nil
}

// unescapeMountPath undoes the kernel's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
