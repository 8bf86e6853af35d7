// Tests of the freeze and the move to the node's CPUs around each floor
// burst taken between the agents' bursts: real processes (sleep) stopped
// and continued by signal, and this test's own threads moved by taskset.
package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// threadCPUs is the Cpus_allowed_list of every thread of this process.
func threadCPUs(t *testing.T) map[string]string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("listing this process's threads: %v (%d)", err, len(tasks))
	}
	cpus := map[string]string{}
	for _, status := range tasks {
		list, err := allowedCPUsOf(status)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended
		}
		if err != nil {
			t.Fatal(err)
		}
		cpus[status] = list
	}
	return cpus
}

// oneCPU is a CPU this process may run on, other than its whole list
// when it has more than one: the node's CPUs of the test.
func oneCPU(t *testing.T) (cpu int, was string) {
	t.Helper()
	was, err := allowedCPUs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cpus, err := parseCPUList(was)
	if err != nil {
		t.Fatal(err)
	}
	return cpus[len(cpus)-1], was
}

func TestFrozenOnNodeFreezesEveryAgentAndMovesEveryThreadToTheNode(t *testing.T) {
	nodelet, nodeletPID := startAgentProcess(t, "nodelet")
	kubelet, kubeletPID := startAgentProcess(t, "kubelet")
	cpu, was := oneCPU(t)

	measured := false
	err := frozenOnNode([]*agent{nodelet, kubelet}, []int{cpu}, func() error {
		measured = true
		waitState(t, nodeletPID, true)
		waitState(t, kubeletPID, true)
		for thread, list := range threadCPUs(t) {
			if list != strconv.Itoa(cpu) {
				t.Errorf("while measuring, %s allows CPUs %s, want %d", thread, list, cpu)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !measured {
		t.Fatal("the floor was not measured")
	}
	waitState(t, nodeletPID, false)
	waitState(t, kubeletPID, false)
	for thread, list := range threadCPUs(t) {
		if list != was {
			t.Errorf("after measuring, %s allows CPUs %s, want %s as before", thread, list, was)
		}
	}
}

func TestFrozenOnNodeThawsAndMovesBackWhenTheFloorFails(t *testing.T) {
	nodelet, nodeletPID := startAgentProcess(t, "nodelet")
	cpu, was := oneCPU(t)
	failed := errors.New("the runtime refused the sandbox")

	err := frozenOnNode([]*agent{nodelet}, []int{cpu}, func() error { return failed })
	if !errors.Is(err, failed) {
		t.Fatalf("frozenOnNode returned %v, want the floor's error", err)
	}
	waitState(t, nodeletPID, false)
	if now, err := allowedCPUs(os.Getpid()); err != nil || now != was {
		t.Fatalf("after a failed floor the bench allows CPUs %q (%v), want %q", now, err, was)
	}
}

func TestFrozenOnNodeLeavesTheBenchWhereItIsWithoutNodeCPUs(t *testing.T) {
	nodelet, _ := startAgentProcess(t, "nodelet")
	before := threadCPUs(t)
	err := frozenOnNode([]*agent{nodelet}, nil, func() error {
		for thread, list := range threadCPUs(t) {
			if was, ok := before[thread]; ok && list != was {
				t.Errorf("%s allows CPUs %s while measuring, want %s: the node has no CPUs of its own", thread, list, was)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCPUListIsWhatParseCPUListReads(t *testing.T) {
	for _, cpus := range [][]int{{0}, {1, 3}, {2, 3, 4}} {
		list := cpuList(cpus)
		back, err := parseCPUList(list)
		if err != nil || !slices.Equal(back, cpus) || strings.Contains(list, " ") {
			t.Errorf("cpuList(%v) = %q, read back as %v (%v)", cpus, list, back, err)
		}
	}
}
