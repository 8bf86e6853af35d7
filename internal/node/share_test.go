package node

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestMachineWithin(t *testing.T) {
	machine := MachineInfo{MilliCPUs: 8000, MemoryBytes: 32 << 30, EphemeralStorageBytes: 100 << 30, MaxPID: 4194304, KernelVersion: "6.1.0"}
	tests := map[string]struct {
		share  corev1.ResourceList
		maxPID int64
		want   MachineInfo
	}{
		"no share is the whole machine": {share: nil, want: machine},
		"a pod's CPU and memory, in fractions of a CPU": {
			share: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")},
			want:  MachineInfo{MilliCPUs: 1500, MemoryBytes: 2 << 30, EphemeralStorageBytes: 100 << 30, MaxPID: 4194304, KernelVersion: "6.1.0"},
		},
		"memory alone": {
			share: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
			want:  MachineInfo{MilliCPUs: 8000, MemoryBytes: 512 << 20, EphemeralStorageBytes: 100 << 30, MaxPID: 4194304, KernelVersion: "6.1.0"},
		},
		"a pod's ephemeral storage and its cgroup's PID limit": {
			share:  corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse("20Gi")},
			maxPID: 4096,
			want:   MachineInfo{MilliCPUs: 8000, MemoryBytes: 32 << 30, EphemeralStorageBytes: 20 << 30, MaxPID: 4096, KernelVersion: "6.1.0"},
		},
		"a PID limit over the machine's is the machine's": {
			maxPID: 1 << 30,
			want:   machine,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, machine.Within(tc.share, tc.maxPID)); diff != "" {
				t.Errorf("Within() mismatch (-want +got):\n%s", diff)
			}
		})
	}
	capacity := Capacity(machine.Within(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}, 0), 20)
	if cpu := capacity[corev1.ResourceCPU]; cpu.MilliValue() != 1500 {
		t.Errorf("Capacity() cpu = %s, want 1500m", cpu.String())
	}
}
