// Package eviction will hold the node's eviction manager, the kubelet's
// pkg/kubelet/eviction: it watches the node's memory, disk and PID
// signals against their eviction thresholds, reports the MemoryPressure,
// DiskPressure and PIDPressure conditions (package node reports them as
// false until then), and evicts pods, lowest priority and QoS first, to
// reclaim what is short. Nothing lives here yet.
package eviction
