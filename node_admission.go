package main

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strings"

	"github.com/go-logr/logr"

	"github.com/nodelet/nodelet/internal/options"
	"github.com/nodelet/nodelet/internal/resources/admission"
	"github.com/nodelet/nodelet/internal/resources/allocation"
)

// openAllocations reads what the node allocated to its pods before a
// restart; a file it cannot read is logged, and the node starts over
// with the running pods allocated what their specs ask.
func openAllocations(rootDir string, log logr.Logger) *allocation.Store {
	allocations, err := allocation.Open(rootDir)
	if err != nil {
		log.Error(err, "Starting over with no pod allocations: the running pods are allocated what their specs ask")
	}
	return allocations
}

// newAdmitter prepares pod admission with what this node is: its OS, its
// kernel's release (which sysctls are safe depends on it), the unsafe
// sysctls the options allow and whether its host ports are its own.
func newAdmitter(opts *options.NodeletServer) (*admission.Admitter, error) {
	admitter, err := admission.New(admission.Node{
		OS:                   goruntime.GOOS,
		KernelVersion:        kernelRelease(),
		AllowedUnsafeSysctls: opts.AllowedUnsafeSysctls,
		HostPortsShared:      opts.HostPortsShared,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up pod admission: %w", err)
	}
	return admitter, nil
}

// kernelRelease is the running kernel's release, as the kubelet reads it;
// empty when it cannot be read, and then only the sysctls safe on every
// kernel are.
func kernelRelease() string {
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(release))
}
