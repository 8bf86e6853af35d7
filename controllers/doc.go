// Package controllers holds nodelet's pod reconciler, the kubelet's sync
// loop and pod workers as a controller-runtime controller: the API server's
// Pods bound to this node (a spec.nodeName field selector) and the
// PodQueue's GenericEvents from the PLEG, the prober and the network feed
// one queue; each reconcile admits a new pod, reads the runtime's record
// from the PLEG's cache, decides with runtime.ComputePodActions, carries
// the actions out through the runtime, and writes the status package
// podstatus generates. Housekeeping, container GC, preemption, resize and
// a pod's termination and removal hang off the same reconciler.
package controllers
