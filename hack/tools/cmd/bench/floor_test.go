package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The floor pods' containers ask the runtime for what the bench's pods'
// containers ask once an agent has done its part: their bind mounts and
// environment, with the mounted files in place.
func TestFloorContainersMountWhatTheBenchsPodsMount(t *testing.T) {
	dir := t.TempDir()
	a := &agent{Name: "nodelet", StateDir: dir}
	mains, cleanup, err := floorMains([]*agent{a}, "pause", "busybox")
	if err != nil {
		t.Fatal(err)
	}
	serviceLinks := []string{"KUBERNETES_PORT", "KUBERNETES_PORT_443_TCP", "KUBERNETES_PORT_443_TCP_ADDR", "KUBERNETES_PORT_443_TCP_PORT",
		"KUBERNETES_PORT_443_TCP_PROTO", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS"}
	for _, tc := range []struct {
		workload, image string
		mounts, envs    []string
	}{
		{"", "pause", []string{"/dev/termination-log", "/etc/hosts", "/var/run/secrets/kubernetes.io/serviceaccount"}, serviceLinks},
		{userWorkload, "busybox", []string{"/dev/termination-log", "/etc/bench", "/etc/hosts", "/var/run/secrets/kubernetes.io/serviceaccount"}, append(slices.Clone(serviceLinks), "PASSWORD")},
	} {
		c := mains[a.Name][tc.workload]
		if c.image != tc.image {
			t.Errorf("workload %q: image %q, want %q", tc.workload, c.image, tc.image)
		}
		var mounts, envs []string
		for _, m := range c.mounts {
			mounts = append(mounts, m.ContainerPath)
			if _, err := os.Stat(m.HostPath); err != nil {
				t.Errorf("workload %q: the file mounted at %s: %v", tc.workload, m.ContainerPath, err)
			}
		}
		for _, e := range c.envs {
			envs = append(envs, e.Key)
		}
		slices.Sort(mounts)
		slices.Sort(envs)
		if !slices.Equal(mounts, tc.mounts) {
			t.Errorf("workload %q mounts %v, want %v", tc.workload, mounts, tc.mounts)
		}
		if !slices.Equal(envs, tc.envs) {
			t.Errorf("workload %q has variables %v, want %v", tc.workload, envs, tc.envs)
		}
	}
	cleanup()
	if _, err := os.Stat(filepath.Join(dir, "floor-volumes")); !os.IsNotExist(err) {
		t.Errorf("the floor's files are still there after cleanup: %v", err)
	}
}
