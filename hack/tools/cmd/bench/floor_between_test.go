// Tests of the freeze around the floor runs taken between the single-pod
// runs: real processes (sleep), stopped and continued by signal.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startAgentProcess starts a stand-in for an agent's process and writes
// its pidfile where the agent's would be.
func startAgentProcess(t *testing.T, name string) (*agent, int) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	a := &agent{Name: name, StateDir: t.TempDir()}
	if err := os.MkdirAll(filepath.Dir(a.pidFile()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return a, cmd.Process.Pid
}

// processState is the state letter of /proc/PID/stat: T when stopped.
func processState(pid int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The state follows the command name's closing parenthesis.
	after := data[bytes.LastIndexByte(data, ')')+1:]
	return strings.Fields(string(after))[0], nil
}

// waitState polls until the process is in (or out of) the stopped state.
func waitState(t *testing.T, pid int, stopped bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		state, err := processState(pid)
		if err != nil {
			t.Fatal(err)
		}
		if (state == "T") == stopped {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d in state %s, want stopped=%v", pid, state, stopped)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFreezeAgentsStopsEveryAgentUntilThawed(t *testing.T) {
	nodelet, nodeletPID := startAgentProcess(t, "nodelet")
	kubelet, kubeletPID := startAgentProcess(t, "kubelet")

	thaw, err := freezeAgents([]*agent{nodelet, kubelet})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, nodeletPID, true)
	waitState(t, kubeletPID, true)

	thaw()
	waitState(t, nodeletPID, false)
	waitState(t, kubeletPID, false)
}

func TestFreezeAgentsThawsThoseItFrozeWhenAnotherCannotBe(t *testing.T) {
	nodelet, nodeletPID := startAgentProcess(t, "nodelet")
	gone := &agent{Name: "kubelet", StateDir: t.TempDir()} // no pidfile

	thaw, err := freezeAgents([]*agent{nodelet, gone})
	if err == nil {
		t.Fatal("freezing an agent without a process succeeded, want an error")
	}
	waitState(t, nodeletPID, true)
	thaw()
	waitState(t, nodeletPID, false)
}
