package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostMemoryAvailable is memory.available as nodelet computes it: the
// node's memory (MemTotal) less the root memory cgroup's working set
// (usage less inactive file pages), on cgroup v1 or v2.
func hostMemoryAvailable(t *testing.T) int64 {
	t.Helper()
	readInts := func(path string) map[string]int64 {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		values := map[string]int64{}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(strings.Replace(line, ":", " ", 1))
			if len(fields) < 2 {
				continue
			}
			if v, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				values[fields[0]] = v
			}
		}
		return values
	}
	total := readInts("/proc/meminfo")["MemTotal"] * 1024
	var workingSet int64
	if usage, err := os.ReadFile("/sys/fs/cgroup/memory/memory.usage_in_bytes"); err == nil {
		used, err := strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		workingSet = used - readInts("/sys/fs/cgroup/memory/memory.stat")["total_inactive_file"]
	} else {
		stat := readInts("/sys/fs/cgroup/memory.stat")
		workingSet = stat["anon"] + stat["file"] - stat["inactive_file"]
	}
	return total - max(workingSet, 0)
}

// nodeCondition is the Node's condition of type c.
func (f *Framework) nodeCondition(ctx context.Context, c corev1.NodeConditionType) (corev1.NodeCondition, error) {
	node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		return corev1.NodeCondition{}, err
	}
	for _, have := range node.Status.Conditions {
		if have.Type == c {
			return have, nil
		}
	}
	return corev1.NodeCondition{}, fmt.Errorf("node %s has no %s condition", f.Env.NodeName, c)
}

// evictionMessage is the kubelet's message for a container over its
// (zero) memory request under a memory.available threshold.
var evictionMessage = regexp.MustCompile(`^The node was low on resource: memory\. Threshold quantity: \d+(Ki|Mi|Gi)?, available: \d+(Ki|Mi|Gi)?\. Container hog was using \d+(Ki|Mi|Gi)?, request is 0, has larger consumption of memory\. $`)
