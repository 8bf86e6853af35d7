// Package eviction is the node's eviction thresholds, the kubelet's
// pkg/kubelet/eviction: ParseThresholdConfig reads --eviction-hard (and
// the soft statements, grace periods and minimum reclaims, which nothing
// acts on yet) into Thresholds, and HardEvictionReservation is what the
// hard ones keep from the node's allocatable. The eviction manager, which
// watches the node's memory, disk and PID signals against the thresholds,
// reports the MemoryPressure, DiskPressure and PIDPressure conditions
// (package node reports them as false until then) and evicts pods, is to
// come.
package eviction
