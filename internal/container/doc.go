// Package container holds the types that the runtime manager, the status
// generator, the PLEG, the prober, podenv and the node server share: a
// pod's record as the container runtime holds it (PodStatus,
// ContainerStatus, their states and IDs), probe results, the container
// labels nodelet writes, the waiting reasons, and the few pure helpers over
// them. It is the kubelet's pkg/kubelet/container, imported as
// kubecontainer as the kubelet does.
//
// It sits below every subsystem: it calls nothing, holds no CRI client
// and imports nothing of nodelet but leaf helpers, so that the packages
// that only read the runtime's answers need not import the runtime
// manager that produces them.
package container
