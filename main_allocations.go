package main

import (
	"github.com/go-logr/logr"

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
