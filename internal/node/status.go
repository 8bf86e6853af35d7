package node

// The node's status, computed: pure functions of the Node as the API server
// has it, the machine's facts and the runtime's state, with the time passed
// in. No I/O here.

import (
	"encoding/json"
	"fmt"
	goruntime "runtime"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Node condition reasons and messages, in the kubelet's words with
// nodelet's name.
const (
	nodeReasonReady             = "KubeletReady"
	nodeReasonNotReady          = "KubeletNotReady"
	nodeReasonSufficientMemory  = "KubeletHasSufficientMemory"
	nodeReasonNoDiskPressure    = "KubeletHasNoDiskPressure"
	nodeReasonSufficientPID     = "KubeletHasSufficientPID"
	nodeMessageReady            = "kubelet is posting ready status"
	nodeMessageSufficientMemory = "kubelet has sufficient memory available"
	nodeMessageNoDiskPressure   = "kubelet has no disk pressure"
	nodeMessageSufficientPID    = "kubelet has sufficient PID available"
	nodeMessageRuntimeDown      = "container runtime is down"

	nodeReasonInsufficientMemory  = "KubeletHasInsufficientMemory"
	nodeReasonDiskPressure        = "KubeletHasDiskPressure"
	nodeReasonInsufficientPID     = "KubeletHasInsufficientPID"
	nodeMessageInsufficientMemory = "kubelet has insufficient memory available"
	nodeMessageDiskPressure       = "kubelet has disk pressure"
	nodeMessageInsufficientPID    = "kubelet has insufficient PID available"
)

// eventRebooted is the kubelet's reason of the Node's event after a reboot.
const eventRebooted = "Rebooted"

// Rebooted reports whether the machine has rebooted since the Node was
// last written: the Node holds a boot ID, and it is not the machine's.
func Rebooted(nodeBootID, machineBootID string) bool {
	return nodeBootID != "" && nodeBootID != machineBootID
}

func nodeReady(status corev1.NodeStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeFacts are what the Node says about the machine and the agent; they
// do not change while nodelet runs.
type nodeFacts struct {
	machine        MachineInfo
	addresses      []corev1.NodeAddress
	nodeletVersion string
	port           int32
	maxPods        int
	// allocatable is what is kept from pods.
	allocatable AllocatableConfig
	// labels are added to the Node's own at registration only, as the
	// kubelet's --node-labels.
	labels map[string]string
	// taints are the Node's at registration only: as the kubelet's
	// --register-with-taints, they are never put back on a Node that
	// exists, so an administrator may remove them.
	taints []corev1.Taint
}

// nodeRuntimeState is the container runtime as last read successfully.
type nodeRuntimeState struct {
	version *runtimeapi.VersionResponse
	status  *runtimeapi.RuntimeStatus
	// observed is when status was read.
	observed time.Time
	// networkError is nodelet's own network's, in agent mode.
	networkError error
	// images are the runtime's images, when imagesRead.
	images     []*runtimeapi.Image
	imagesRead bool
	// pressure are the pressure conditions the eviction manager reports
	// true.
	pressure []corev1.NodeConditionType
	// volumesInUse are the attachable volumes in use, when
	// volumesInUseRead.
	volumesInUse     []corev1.UniqueVolumeName
	volumesInUseRead bool
	// shutdownError says the node is shutting down.
	shutdownError error
	// revision is the runtime's revision, wanted and running.
	revision runtimeRevision
}

// annotationControllerManagedAttachDetach tells the attach/detach
// controller that it manages the node's attachments.
const annotationControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"

// LabelAgent marks the Nodes nodelet runs, so that a scheduler, a
// DaemonSet's affinity or a user can tell them from kubelet Nodes.
const LabelAgent = "nodelet.dev/agent"

// newNode is the Node nodelet registers.
func newNode(name, hostname string, facts nodeFacts, rt nodeRuntimeState, now time.Time) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			// As the kubelet's default: the attach/detach controller
			// attaches and detaches the node's volumes (a CSI driver's
			// VolumeAttachments), nodelet only waits for them.
			Annotations: map[string]string{annotationControllerManagedAttachDetach: "true"},
			Labels: map[string]string{
				corev1.LabelHostname:   hostname,
				corev1.LabelOSStable:   goruntime.GOOS,
				corev1.LabelArchStable: goruntime.GOARCH,
				LabelAgent:             "nodelet",
			},
		},
	}
	for key, value := range facts.labels {
		if _, own := node.Labels[key]; !own {
			node.Labels[key] = value
		}
	}
	if len(facts.taints) > 0 {
		node.Spec.Taints = slices.Clone(facts.taints)
	}
	node.Status, _ = nodeStatus(node, facts, rt, now, 0)
	return node
}

// nodeStatus computes the status the node should have from the Node as the
// API server has it, and says whether it must be written: when anything
// other than the heartbeat times differs, or when the last write is
// ReportFrequency old. The last write is the newest heartbeat on the Node,
// so nothing of it lives in memory.
func nodeStatus(node *corev1.Node, facts nodeFacts, rt nodeRuntimeState, now time.Time, reportFrequency time.Duration) (corev1.NodeStatus, bool) {
	current := node.Status
	status := *current.DeepCopy()

	resources := nodeCapacity(facts)
	// Resources others report (extended resources, huge pages) are kept,
	// their allocatable as they set it; nodelet's own are its capacity
	// less what is kept for the system and for eviction.
	status.Capacity = mergeNodeResources(status.Capacity, resources)
	computed := facts.allocatable.Allocatable(status.Capacity)
	allocatable := corev1.ResourceList{}
	for name := range resources {
		allocatable[name] = computed[name]
	}
	status.Allocatable = mergeNodeResources(status.Allocatable, allocatable)
	if rt.imagesRead {
		status.Images = nodeImages(rt.images)
	}
	if rt.volumesInUseRead {
		status.VolumesInUse = rt.volumesInUse
	}

	status.Addresses = append([]corev1.NodeAddress(nil), facts.addresses...)
	status.DaemonEndpoints.KubeletEndpoint.Port = facts.port

	runtimeVersion := current.NodeInfo.ContainerRuntimeVersion
	if rt.version != nil {
		runtimeVersion = rt.version.RuntimeName + "://" + rt.version.RuntimeVersion
	}
	status.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               facts.machine.MachineID,
		SystemUUID:              facts.machine.SystemUUID,
		BootID:                  facts.machine.BootID,
		KernelVersion:           facts.machine.KernelVersion,
		OSImage:                 facts.machine.OSImage,
		ContainerRuntimeVersion: runtimeVersion,
		KubeletVersion:          facts.nodeletVersion,
		OperatingSystem:         facts.machine.OperatingSystem,
		Architecture:            facts.machine.Architecture,
	}

	heartbeat := metav1.NewTime(now)
	readyStatus, readyReason, readyMessage := nodeReadiness(rt, now)
	conditions := []corev1.NodeCondition{
		pressureCondition(rt.pressure, corev1.NodeMemoryPressure),
		pressureCondition(rt.pressure, corev1.NodeDiskPressure),
		pressureCondition(rt.pressure, corev1.NodePIDPressure),
	}
	if outOfDate, ok := runtimeRevisionCondition(rt.revision); ok {
		conditions = append(conditions, outOfDate)
	}
	// Ready comes last, as the kubelet keeps it.
	conditions = append(conditions, corev1.NodeCondition{Type: corev1.NodeReady, Status: readyStatus, Reason: readyReason, Message: readyMessage})
	for _, want := range conditions {
		want.LastHeartbeatTime = heartbeat
		status.Conditions = setNodeCondition(status.Conditions, want)
	}

	changed := !equality.Semantic.DeepEqual(withoutHeartbeats(current), withoutHeartbeats(status))
	due := now.Sub(lastHeartbeat(current)) >= reportFrequency
	return status, changed || due
}

// pressureCondition is a pressure condition as the kubelet words it, true
// when the eviction manager reports it.
func pressureCondition(pressure []corev1.NodeConditionType, t corev1.NodeConditionType) corev1.NodeCondition {
	words := map[corev1.NodeConditionType][4]string{
		corev1.NodeMemoryPressure: {nodeReasonSufficientMemory, nodeMessageSufficientMemory, nodeReasonInsufficientMemory, nodeMessageInsufficientMemory},
		corev1.NodeDiskPressure:   {nodeReasonNoDiskPressure, nodeMessageNoDiskPressure, nodeReasonDiskPressure, nodeMessageDiskPressure},
		corev1.NodePIDPressure:    {nodeReasonSufficientPID, nodeMessageSufficientPID, nodeReasonInsufficientPID, nodeMessageInsufficientPID},
	}[t]
	if slices.Contains(pressure, t) {
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionTrue, Reason: words[2], Message: words[3]}
	}
	return corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: words[0], Message: words[1]}
}

// nodeCapacity is the node's own resources: the machine's and its pods.
func nodeCapacity(facts nodeFacts) corev1.ResourceList {
	return Capacity(facts.machine, facts.maxPods)
}

// Capacity is a node's own resources: the machine's and its pods.
func Capacity(machine MachineInfo, maxPods int) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(machine.MilliCPUs, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(machine.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(machine.EphemeralStorageBytes, resource.BinarySI),
	}
}

// nodeReadiness is the Ready condition's status, reason and message for the
// runtime's state, with the kubelet's messages.
func nodeReadiness(rt nodeRuntimeState, now time.Time) (corev1.ConditionStatus, string, string) {
	if rt.status == nil || now.Sub(rt.observed) > runtimeStatusStaleAfter {
		return corev1.ConditionFalse, nodeReasonNotReady, nodeMessageRuntimeDown
	}
	var errs []error
	if c := findRuntimeCondition(rt.status, runtimeapi.RuntimeReady); !c.Status {
		errs = append(errs, fmt.Errorf("container runtime not ready: %s", formatRuntimeCondition(c)))
	}
	if err := networkNotReady(rt); err != nil {
		errs = append(errs, err)
	}
	if rt.shutdownError != nil {
		errs = append(errs, rt.shutdownError)
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return corev1.ConditionFalse, nodeReasonNotReady, err.Error()
	}
	return corev1.ConditionTrue, nodeReasonReady, nodeMessageReady
}

// networkNotReady says why the pod network is not ready: the runtime's
// NetworkReady condition, then nodelet's own network in agent mode. A
// runtime not yet read says nothing.
func networkNotReady(rt nodeRuntimeState) error {
	var errs []error
	if rt.status != nil {
		if c := findRuntimeCondition(rt.status, runtimeapi.NetworkReady); !c.Status {
			errs = append(errs, fmt.Errorf("container runtime network not ready: %s", formatRuntimeCondition(c)))
		}
	}
	if rt.networkError != nil {
		errs = append(errs, fmt.Errorf("nodelet network not ready: %w", rt.networkError))
	}
	return utilerrors.NewAggregate(errs)
}

func findRuntimeCondition(status *runtimeapi.RuntimeStatus, conditionType string) *runtimeapi.RuntimeCondition {
	for _, c := range status.GetConditions() {
		if c.GetType() == conditionType {
			return c
		}
	}
	return &runtimeapi.RuntimeCondition{Type: conditionType, Reason: "ConditionNotReported"}
}

func formatRuntimeCondition(c *runtimeapi.RuntimeCondition) string {
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.GetType(), c.GetStatus(), c.GetReason(), c.GetMessage())
}

// setNodeCondition puts want in place of the condition of its type, keeping
// that one's transition time when the status did not change, or appends it.
func setNodeCondition(conditions []corev1.NodeCondition, want corev1.NodeCondition) []corev1.NodeCondition {
	for i, c := range conditions {
		if c.Type != want.Type {
			continue
		}
		want.LastTransitionTime = c.LastTransitionTime
		if c.Status != want.Status {
			want.LastTransitionTime = want.LastHeartbeatTime
		}
		conditions[i] = want
		return conditions
	}
	want.LastTransitionTime = want.LastHeartbeatTime
	return append(conditions, want)
}

func mergeNodeResources(current, own corev1.ResourceList) corev1.ResourceList {
	merged := corev1.ResourceList{}
	for name, q := range current {
		merged[name] = q
	}
	for name, q := range own {
		merged[name] = q
	}
	return merged
}

func withoutHeartbeats(status corev1.NodeStatus) corev1.NodeStatus {
	status.Conditions = append([]corev1.NodeCondition(nil), status.Conditions...)
	for i := range status.Conditions {
		status.Conditions[i].LastHeartbeatTime = metav1.Time{}
	}
	return status
}

func lastHeartbeat(status corev1.NodeStatus) time.Time {
	var last time.Time
	for _, c := range status.Conditions {
		if c.LastHeartbeatTime.After(last) {
			last = c.LastHeartbeatTime.Time
		}
	}
	return last
}

// nodeStatusPatch is the strategic merge patch from one node status to
// another. Addresses are replaced whole: their merge key is their type,
// which two InternalIPs share.
func nodeStatusPatch(current, wanted corev1.NodeStatus) ([]byte, error) {
	replaceAddresses := len(current.Addresses) > 0 && !equality.Semantic.DeepEqual(current.Addresses, wanted.Addresses)
	target := wanted
	if replaceAddresses {
		target.Addresses = current.Addresses
	}
	from, err := json.Marshal(corev1.Node{Status: current})
	if err != nil {
		return nil, err
	}
	to, err := json.Marshal(corev1.Node{Status: target})
	if err != nil {
		return nil, err
	}
	data, err := strategicpatch.CreateTwoWayMergePatch(from, to, corev1.Node{})
	if err != nil || !replaceAddresses {
		return data, err
	}

	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, err
	}
	statusPatch, _ := patch["status"].(map[string]any)
	if statusPatch == nil {
		statusPatch = map[string]any{}
		patch["status"] = statusPatch
	}
	addresses := []any{}
	for _, a := range wanted.Addresses {
		addresses = append(addresses, map[string]any{"type": string(a.Type), "address": a.Address})
	}
	statusPatch["addresses"] = append(addresses, map[string]any{"$patch": "replace"})
	return json.Marshal(patch)
}
