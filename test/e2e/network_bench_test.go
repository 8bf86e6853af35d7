package e2e

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkSandboxCreation times RunPodSandbox through the stack's runtime
// with the pod network set up as the stack's network mode does it: by the
// runtime (runtime mode), or through nodelet's shim by nodelet (agent
// mode). Each op creates one sandbox; it is stopped and removed outside
// the timer. Besides the mean it reports the median and the 99th
// percentile (`make bench-network` runs 50 in each mode).
func BenchmarkSandboxCreation(b *testing.B) {
	ctx := b.Context()
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		config := &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{
				Name: fmt.Sprintf("bench-%d", i), Namespace: "bench", Uid: fmt.Sprintf("bench-uid-%d-%d", time.Now().UnixNano(), i),
			},
			Hostname: fmt.Sprintf("bench-%d", i),
			Linux: &runtimeapi.LinuxPodSandboxConfig{
				CgroupParent: filepath.Join(f.Env.CgroupRoot, "bench"),
				SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
					NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD},
				},
			},
		}
		b.StartTimer()
		started := time.Now()
		id, err := f.Runtime.RunPodSandbox(ctx, config, "")
		took := time.Since(started)
		b.StopTimer()
		if err != nil {
			b.Fatalf("RunPodSandbox: %v", err)
		}
		durations = append(durations, took)
		if err := f.Runtime.StopPodSandbox(ctx, id); err != nil {
			b.Fatalf("StopPodSandbox: %v", err)
		}
		if err := f.Runtime.RemovePodSandbox(ctx, id); err != nil {
			b.Fatalf("RemovePodSandbox: %v", err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	b.ReportMetric(float64(percentile(durations, 50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(durations, 99).Microseconds())/1000, "p99-ms")
	b.Logf("%s network mode: %d sandboxes, median %s, p99 %s", f.Env.NetworkMode, len(durations), percentile(durations, 50), percentile(durations, 99))
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank-1, 0)]
}
