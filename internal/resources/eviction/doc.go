// Package eviction is the node's eviction decisions, the kubelet's
// pkg/kubelet/eviction: ParseThresholdConfig reads --eviction-hard,
// --eviction-soft and their grace periods and minimum reclaims into
// Thresholds, and HardEvictionReservation is what the hard ones keep from
// the node's allocatable. Synchronize is one pass of the eviction manager
// over the signals observed (memory, disk, PIDs): which thresholds are met
// past their grace periods, which pressure conditions the node reports
// (kept for the pressure transition period), and which threshold to act
// on; Rank orders the pods to evict and Message tells them why. Pure: the
// manager that reads the signals and evicts is package evictionmanager.
package eviction
