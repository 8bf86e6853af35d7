package controllers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/network"
)

// Node condition reasons and messages, the kubelet's own: dashboards,
// alerts and `kubectl describe node` match on them.
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
)

// Defaults of NodeStatusOptions and LeaseOptions.
const (
	defaultNodeletVersion     = "v0.0.0-dev"
	defaultKubeletPort        = 10250
	defaultMaxPods            = 110
	defaultRootDir            = "/var/lib/nodelet"
	defaultStatusUpdatePeriod = 10 * time.Second
	defaultStatusReportPeriod = 5 * time.Minute
	defaultLeaseDuration      = 40
	defaultLeaseRenewInterval = 10 * time.Second
)

const (
	// nodeCallTimeout bounds each call of the status loop.
	nodeCallTimeout        = 10 * time.Second
	maxRegistrationBackoff = 7 * time.Second
	maxLeaseUpdateAttempts = 5
	// runtimeStatusStaleAfter is how long a runtime status read stays good
	// when the next reads fail, so one slow call does not flip the node to
	// NotReady (the kubelet allows its runtime as long).
	runtimeStatusStaleAfter = 30 * time.Second
)

// RuntimeInfoService is what the node loops ask the container runtime;
// cri.RuntimeService has it.
type RuntimeInfoService interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// NodeStatusOptions configure the NodeStatusReporter.
type NodeStatusOptions struct {
	// NodeName is the Node's name. Required.
	NodeName string
	// NodeIPs are the node's InternalIP addresses, at most one per family.
	// Default: the first IPv4 address of the host's interfaces that are up
	// (loopback last), or if there is none the first IPv6 one.
	NodeIPs []string
	// Hostname is the Node's Hostname address and kubernetes.io/hostname
	// label. Default: NodeName, so that two agents on one host stay two
	// topology domains.
	Hostname string
	// NodeletVersion is reported as nodeInfo.kubeletVersion. Default:
	// "v0.0.0-dev".
	NodeletVersion string
	// KubeletPort is the port of nodelet's own API, reported as
	// daemonEndpoints.kubeletEndpoint. Default: 10250.
	KubeletPort int32
	// MaxPods is the node's pods capacity. Default: 110.
	MaxPods int
	// RootDir is nodelet's state folder; the file system holding it is the
	// node's ephemeral-storage capacity. Default: /var/lib/nodelet.
	RootDir string
	// PodCIDRs, when set, are the node's pod subnets for its CNI
	// configuration, in place of the Node's spec.podCIDRs. Default: none.
	PodCIDRs []string
	// Network, when set, has the node's CNI conflist rendered into its
	// ConfDir once the node has pod CIDRs and no configuration is there
	// (the runtime networking mode); its PodCIDRs are ignored. Default: nil,
	// no conflist.
	Network *network.ConfigOptions
	// NetworkStatus, when set, is nodelet's own part of the node's network
	// readiness (the agent network mode): nil when its CNI configuration is
	// usable. Default: nil, the runtime's NetworkReady alone.
	NetworkStatus func(ctx context.Context) error
	// UpdateFrequency is how often the node's status is computed and
	// compared with the API server's (the kubelet's
	// nodeStatusUpdateFrequency). Default: 10s.
	UpdateFrequency time.Duration
	// ReportFrequency is how often the status is written when nothing in
	// it changed (the kubelet's nodeStatusReportFrequency). Default: 5m.
	ReportFrequency time.Duration
	// Machine reads the machine's facts once at start. Default:
	// ReadMachineInfo(RootDir).
	Machine func() (MachineInfo, error)
	// Clock is the time source. Default: the real clock.
	Clock clock.WithTicker
	// Log is the loop's logger. Default: the logger of Start's context.
	Log logr.Logger
}

// NodeStatusReporter registers the Node and keeps its status true to the
// machine and the runtime. It is a manager.Runnable.
type NodeStatusReporter struct {
	client  client.Client
	reader  client.Reader
	runtime RuntimeInfoService
	opts    NodeStatusOptions

	// lastRuntime is the runtime as last read successfully; Start's
	// goroutine alone uses it.
	lastRuntime nodeRuntimeState
	nodeIPs     atomic.Pointer[[]string]
	// networkErr is why the pod network is not ready, as last observed.
	networkErr atomic.Pointer[error]
}

// NewNodeStatusReporter returns a reporter that writes with c and reads the
// Node with reader, which should be the manager's API reader: every
// comparison is with the Node as the API server has it, so that a status
// someone else changed (Ready=Unknown after an outage) is noticed.
func NewNodeStatusReporter(c client.Client, reader client.Reader, runtime RuntimeInfoService, opts NodeStatusOptions) (*NodeStatusReporter, error) {
	if opts.NodeName == "" {
		return nil, errors.New("node status reporter: no node name")
	}
	for _, ip := range opts.NodeIPs {
		if net.ParseIP(ip) == nil {
			return nil, fmt.Errorf("node status reporter: node IP %q is not an IP address", ip)
		}
	}
	if opts.Hostname == "" {
		opts.Hostname = opts.NodeName
	}
	if opts.NodeletVersion == "" {
		opts.NodeletVersion = defaultNodeletVersion
	}
	if opts.KubeletPort == 0 {
		opts.KubeletPort = defaultKubeletPort
	}
	if opts.MaxPods == 0 {
		opts.MaxPods = defaultMaxPods
	}
	if opts.RootDir == "" {
		opts.RootDir = defaultRootDir
	}
	if opts.UpdateFrequency <= 0 {
		opts.UpdateFrequency = defaultStatusUpdatePeriod
	}
	if opts.ReportFrequency <= 0 {
		opts.ReportFrequency = defaultStatusReportPeriod
	}
	if opts.Machine == nil {
		rootDir := opts.RootDir
		opts.Machine = func() (MachineInfo, error) { return ReadMachineInfo(rootDir) }
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &NodeStatusReporter{client: c, reader: reader, runtime: runtime, opts: opts}, nil
}

// NeedLeaderElection is false: every node reports itself.
func (r *NodeStatusReporter) NeedLeaderElection() bool { return false }

// NodeIPs returns the node's InternalIP addresses once the Node is
// registered, for the pods' hostIP and hostIPs; nil before.
func (r *NodeStatusReporter) NodeIPs() []string {
	if ips := r.nodeIPs.Load(); ips != nil {
		return append([]string(nil), *ips...)
	}
	return nil
}

// NetworkError says why the node's pod network is not ready, as last
// observed (the runtime's NetworkReady condition and, in agent mode,
// nodelet's own configuration); nil when it is, or before the first look.
func (r *NodeStatusReporter) NetworkError() error {
	if err := r.networkErr.Load(); err != nil {
		return *err
	}
	return nil
}

// Start registers the Node, then refreshes its status every
// UpdateFrequency until ctx ends. It fails only when the machine's facts
// cannot be read; API and runtime errors are logged and retried.
func (r *NodeStatusReporter) Start(ctx context.Context) error {
	log := r.opts.Log
	if log.GetSink() == nil {
		log = klog.FromContext(ctx)
	}
	log = log.WithValues("node", klog.KRef("", r.opts.NodeName))

	machine, err := r.opts.Machine()
	if err != nil {
		return fmt.Errorf("reading the facts of node %s: %w", r.opts.NodeName, err)
	}
	addresses, err := r.addresses()
	if err != nil {
		return fmt.Errorf("finding the addresses of node %s: %w", r.opts.NodeName, err)
	}
	facts := nodeFacts{
		machine:        machine,
		addresses:      addresses,
		nodeletVersion: r.opts.NodeletVersion,
		port:           r.opts.KubeletPort,
		maxPods:        r.opts.MaxPods,
	}

	r.observeRuntime(ctx, log)
	if !r.registerWithBackoff(ctx, log, facts) {
		return nil
	}
	for {
		// Until the node is Ready (a runtime coming up, a conflist just
		// written), look again every second, as the kubelet's fast status
		// updates do: pods wait for the not-ready taint to go.
		next := r.opts.UpdateFrequency
		if !r.sync(ctx, log, facts) && next > notReadyUpdateFrequency {
			next = notReadyUpdateFrequency
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.opts.Clock.After(next):
		}
	}
}

// notReadyUpdateFrequency is how often the status of a node that is not
// Ready is refreshed.
const notReadyUpdateFrequency = time.Second

func (r *NodeStatusReporter) addresses() ([]corev1.NodeAddress, error) {
	ips := r.opts.NodeIPs
	if len(ips) == 0 {
		found, err := hostInterfaceIPs()
		if err != nil {
			return nil, err
		}
		ip := pickNodeIP(found)
		if ip == nil {
			return nil, errors.New("the host has no IP address; set the node IP")
		}
		ips = []string{ip.String()}
	}
	var addresses []corev1.NodeAddress
	for _, ip := range ips {
		addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return append(addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: r.opts.Hostname}), nil
}

// registerWithBackoff creates the Node until it exists or ctx ends, and
// says which.
func (r *NodeStatusReporter) registerWithBackoff(ctx context.Context, log logr.Logger, facts nodeFacts) bool {
	backoff := 100 * time.Millisecond
	for {
		err := r.register(ctx, log, facts)
		if err == nil {
			return true
		}
		log.Error(err, "Failed to register the node; retrying", "after", backoff)
		select {
		case <-ctx.Done():
			return false
		case <-r.opts.Clock.After(backoff):
		}
		backoff = min(2*backoff, maxRegistrationBackoff)
	}
}

func (r *NodeStatusReporter) register(ctx context.Context, log logr.Logger, facts nodeFacts) error {
	ctx, cancel := context.WithTimeout(ctx, nodeCallTimeout)
	defer cancel()
	node := newNode(r.opts.NodeName, r.opts.Hostname, facts, r.lastRuntime, r.opts.Clock.Now())
	switch err := r.client.Create(ctx, node); {
	case err == nil:
		log.Info("Registered the node")
	case apierrors.IsAlreadyExists(err):
		log.V(2).Info("Found the node registered already")
	default:
		return fmt.Errorf("creating node %s: %w", r.opts.NodeName, err)
	}
	var ips []string
	for _, a := range facts.addresses {
		if a.Type == corev1.NodeInternalIP {
			ips = append(ips, a.Address)
		}
	}
	r.nodeIPs.Store(&ips)
	return nil
}

// sync compares the status the node should have with the API server's and
// patches the difference, then makes sure the runtime has a CNI
// configuration for the node's pod CIDRs. It reports whether the node is
// Ready.
func (r *NodeStatusReporter) sync(ctx context.Context, log logr.Logger, facts nodeFacts) bool {
	r.observeRuntime(ctx, log)

	ctx, cancel := context.WithTimeout(ctx, nodeCallTimeout)
	defer cancel()
	node := &corev1.Node{}
	key := client.ObjectKey{Name: r.opts.NodeName}
	// Like the kubelet, read from the API server's watch cache: the status
	// is compared with what is there, not with what nodelet last wrote. The
	// cache may not hold a Node created a moment ago: only etcd's answer
	// says it is gone.
	err := r.reader.Get(ctx, key, node, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	if apierrors.IsNotFound(err) {
		err = r.reader.Get(ctx, key, node)
	}
	if apierrors.IsNotFound(err) {
		log.Info("Found the node deleted; registering it again")
		if err := r.register(ctx, log, facts); err != nil {
			log.Error(err, "Failed to register the node")
		}
		return false
	}
	if err != nil {
		log.Error(err, "Failed to read the node")
		return false
	}

	status, changed := nodeStatus(node, facts, r.lastRuntime, r.opts.Clock.Now(), r.opts.ReportFrequency)
	if changed {
		if err := r.patchStatus(ctx, node, status); err != nil {
			log.Error(err, "Failed to update the node's status")
		} else {
			log.V(2).Info("Updated the node's status")
		}
	}
	r.ensureNetworkConfig(ctx, log, node)
	return nodeReady(status)
}

func nodeReady(status corev1.NodeStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (r *NodeStatusReporter) patchStatus(ctx context.Context, node *corev1.Node, status corev1.NodeStatus) error {
	data, err := nodeStatusPatch(node.Status, status)
	if err != nil {
		return fmt.Errorf("computing the status patch of node %s: %w", node.Name, err)
	}
	if err := r.client.Status().Patch(ctx, node, client.RawPatch(types.StrategicMergePatchType, data)); err != nil {
		return fmt.Errorf("patching the status of node %s: %w", node.Name, err)
	}
	return nil
}

// observeRuntime asks the runtime for its version and status. A failed
// call keeps what was read before: the Ready condition then ages it out.
func (r *NodeStatusReporter) observeRuntime(ctx context.Context, log logr.Logger) {
	ctx, cancel := context.WithTimeout(ctx, nodeCallTimeout)
	defer cancel()
	if version, err := r.runtime.Version(ctx, ""); err != nil {
		log.Error(err, "Failed to get the container runtime version")
	} else {
		r.lastRuntime.version = version
	}
	if r.opts.NetworkStatus != nil {
		r.lastRuntime.networkError = r.opts.NetworkStatus(ctx)
	}
	status, err := r.runtime.Status(ctx, false)
	if err != nil {
		log.Error(err, "Failed to get the container runtime status")
	} else {
		r.lastRuntime.status = status.GetStatus()
		r.lastRuntime.observed = r.opts.Clock.Now()
	}
	networkErr := networkNotReady(r.lastRuntime)
	r.networkErr.Store(&networkErr)
}

func (r *NodeStatusReporter) ensureNetworkConfig(ctx context.Context, log logr.Logger, node *corev1.Node) {
	if r.opts.Network == nil {
		return
	}
	opts := *r.opts.Network
	opts.PodCIDRs = podCIDRs(r.opts.PodCIDRs, node)
	written, err := network.EnsureConfig(ctx, opts)
	switch {
	case err != nil:
		log.Error(err, "Failed to write the node's CNI configuration", "podCIDRs", opts.PodCIDRs)
	case written:
		log.Info("Wrote the node's CNI configuration", "confDir", opts.ConfDir, "podCIDRs", opts.PodCIDRs)
	}
}

// podCIDRs are the node's pod subnets: the configured ones, else the ones
// the controller-manager assigned to the Node.
func podCIDRs(configured []string, node *corev1.Node) []string {
	switch {
	case len(configured) > 0:
		return configured
	case len(node.Spec.PodCIDRs) > 0:
		return node.Spec.PodCIDRs
	case node.Spec.PodCIDR != "":
		return []string{node.Spec.PodCIDR}
	}
	return nil
}

// nodeFacts are what the Node says about the machine and the agent; they
// do not change while nodelet runs.
type nodeFacts struct {
	machine        MachineInfo
	addresses      []corev1.NodeAddress
	nodeletVersion string
	port           int32
	maxPods        int
}

// nodeRuntimeState is the container runtime as last read successfully.
type nodeRuntimeState struct {
	version *runtimeapi.VersionResponse
	status  *runtimeapi.RuntimeStatus
	// observed is when status was read.
	observed time.Time
	// networkError is nodelet's own network's, in agent mode.
	networkError error
}

// LabelAgent marks the Nodes nodelet runs, so that a scheduler, a
// DaemonSet's affinity or a user can tell them from kubelet Nodes.
const LabelAgent = "nodelet.dev/agent"

// newNode is the Node nodelet registers.
func newNode(name, hostname string, facts nodeFacts, rt nodeRuntimeState, now time.Time) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				corev1.LabelHostname:   hostname,
				corev1.LabelOSStable:   goruntime.GOOS,
				corev1.LabelArchStable: goruntime.GOARCH,
				LabelAgent:             "nodelet",
			},
		},
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

	resources := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(facts.machine.CPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(facts.machine.MemoryBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(int64(facts.maxPods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(facts.machine.EphemeralStorageBytes, resource.BinarySI),
	}
	// Resources others report (extended resources) are kept. Nothing is
	// reserved for the system yet, so allocatable is the capacity.
	status.Capacity = mergeNodeResources(status.Capacity, resources)
	status.Allocatable = mergeNodeResources(status.Allocatable, resources)

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
	for _, want := range []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: nodeReasonSufficientMemory, Message: nodeMessageSufficientMemory},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: nodeReasonNoDiskPressure, Message: nodeMessageNoDiskPressure},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: nodeReasonSufficientPID, Message: nodeMessageSufficientPID},
		// Ready comes last, as the kubelet keeps it.
		{Type: corev1.NodeReady, Status: readyStatus, Reason: readyReason, Message: readyMessage},
	} {
		want.LastHeartbeatTime = heartbeat
		status.Conditions = setNodeCondition(status.Conditions, want)
	}

	changed := !equality.Semantic.DeepEqual(withoutHeartbeats(current), withoutHeartbeats(status))
	due := now.Sub(lastHeartbeat(current)) >= reportFrequency
	return status, changed || due
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

// MachineInfo is what the Node reports about the machine.
type MachineInfo struct {
	CPUs                  int
	MemoryBytes           int64
	EphemeralStorageBytes int64
	KernelVersion         string
	OSImage               string
	OperatingSystem       string
	Architecture          string
	// MachineID, SystemUUID and BootID are empty when unreadable.
	MachineID  string
	SystemUUID string
	BootID     string
}

// ReadMachineInfo reads the machine's facts from the host; the
// ephemeral-storage capacity is the size of the file system holding
// rootDir (or its nearest existing parent).
func ReadMachineInfo(rootDir string) (MachineInfo, error) {
	info := MachineInfo{
		CPUs:            goruntime.NumCPU(),
		OperatingSystem: goruntime.GOOS,
		Architecture:    goruntime.GOARCH,
		MachineID:       readMachineFile("/etc/machine-id"),
		SystemUUID:      readMachineFile("/sys/class/dmi/id/product_uuid"),
		BootID:          readMachineFile("/proc/sys/kernel/random/boot_id"),
		KernelVersion:   readMachineFile("/proc/sys/kernel/osrelease"),
	}

	meminfo, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return MachineInfo{}, fmt.Errorf("reading the memory size: %w", err)
	}
	if info.MemoryBytes, err = parseMemTotal(string(meminfo)); err != nil {
		return MachineInfo{}, fmt.Errorf("reading the memory size: %w", err)
	}

	osRelease, err := os.ReadFile("/etc/os-release")
	if errors.Is(err, os.ErrNotExist) {
		osRelease, err = os.ReadFile("/usr/lib/os-release")
	}
	if err == nil {
		info.OSImage = parseOSImage(string(osRelease))
	}
	if info.OSImage == "" {
		info.OSImage = "Linux"
	}

	if info.EphemeralStorageBytes, err = fileSystemSize(rootDir); err != nil {
		return MachineInfo{}, fmt.Errorf("reading the size of the file system holding %s: %w", rootDir, err)
	}
	return info, nil
}

func readMachineFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// parseMemTotal reads MemTotal out of /proc/meminfo, in bytes.
func parseMemTotal(meminfo string) (int64, error) {
	scanner := bufio.NewScanner(strings.NewReader(meminfo))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 2 || fields[0] != "MemTotal:" {
			continue
		}
		kib, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed MemTotal line %q: %w", scanner.Text(), err)
		}
		return kib * 1024, nil
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}

// parseOSImage reads PRETTY_NAME out of an os-release file.
func parseOSImage(osRelease string) string {
	for _, line := range strings.Split(osRelease, "\n") {
		value, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME=")
		if !ok {
			continue
		}
		if unquoted, err := strconv.Unquote(value); err == nil {
			return unquoted
		}
		return strings.Trim(value, `'"`)
	}
	return ""
}

func fileSystemSize(dir string) (int64, error) {
	for {
		var fs syscall.Statfs_t
		err := syscall.Statfs(dir, &fs)
		if err == nil {
			return int64(fs.Blocks) * int64(fs.Bsize), nil
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, syscall.ENOENT) || parent == dir {
			return 0, err
		}
		dir = parent
	}
}

// hostInterfaceIPs lists the addresses of the host's interfaces that are up.
func hostInterfaceIPs() ([]net.IP, error) {
	interfaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, iface := range interfaces {
		if iface.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return nil, err
		}
		for _, addr := range addrs {
			if ipNet, ok := addr.(*net.IPNet); ok {
				ips = append(ips, ipNet.IP)
			}
		}
	}
	return ips, nil
}

// pickNodeIP chooses the node's address: the first global IPv4 one, else
// the first global IPv6 one, else the first loopback one.
func pickNodeIP(ips []net.IP) net.IP {
	var firstV6, firstLoopback net.IP
	for _, ip := range ips {
		switch {
		case ip.IsLoopback():
			if firstLoopback == nil {
				firstLoopback = ip
			}
		case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified():
		case ip.To4() != nil:
			return ip
		case firstV6 == nil:
			firstV6 = ip
		}
	}
	if firstV6 != nil {
		return firstV6
	}
	return firstLoopback
}

// LeaseOptions configure the LeaseRenewer.
type LeaseOptions struct {
	// NodeName is the Node the Lease stands for. Required.
	NodeName string
	// Namespace holds the node leases. Default: kube-node-lease.
	Namespace string
	// DurationSeconds is the Lease's leaseDurationSeconds: how long the node
	// lifecycle controller waits for a renewal. Default: 40.
	DurationSeconds int32
	// RenewInterval is how often the Lease is renewed; it also bounds each
	// renewal's API calls. Default: 10s.
	RenewInterval time.Duration
	// Clock is the time source. Default: the real clock.
	Clock clock.WithTicker
	// Log is the loop's logger. Default: the logger of Start's context.
	Log logr.Logger
}

// LeaseRenewer keeps the node's Lease in kube-node-lease renewed: the
// heartbeat the node lifecycle controller reads. It runs in its own
// goroutine with its own calls, so pod work never delays it. It is a
// manager.Runnable.
type LeaseRenewer struct {
	writer client.Writer
	reader client.Reader
	opts   LeaseOptions

	// latest is the Lease as last written; renewing from it saves a read.
	latest *coordinationv1.Lease
}

// NewLeaseRenewer returns a renewer that writes with writer and reads with
// reader, which must not be a cached client: a cache would watch every
// Lease of the cluster.
func NewLeaseRenewer(writer client.Writer, reader client.Reader, opts LeaseOptions) (*LeaseRenewer, error) {
	if opts.NodeName == "" {
		return nil, errors.New("lease renewer: no node name")
	}
	if opts.Namespace == "" {
		opts.Namespace = corev1.NamespaceNodeLease
	}
	if opts.DurationSeconds <= 0 {
		opts.DurationSeconds = defaultLeaseDuration
	}
	if opts.RenewInterval <= 0 {
		opts.RenewInterval = defaultLeaseRenewInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &LeaseRenewer{writer: writer, reader: reader, opts: opts}, nil
}

// NeedLeaderElection is false: every node renews its own Lease.
func (r *LeaseRenewer) NeedLeaderElection() bool { return false }

// Start renews the Lease every RenewInterval until ctx ends.
func (r *LeaseRenewer) Start(ctx context.Context) error {
	log := r.opts.Log
	if log.GetSink() == nil {
		log = klog.FromContext(ctx)
	}
	log = log.WithValues("lease", klog.KRef(r.opts.Namespace, r.opts.NodeName))
	ticker := r.opts.Clock.NewTicker(r.opts.RenewInterval)
	defer ticker.Stop()
	for {
		if err := r.renew(ctx); err != nil {
			log.Error(err, "Failed to renew the node's lease")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// renew writes a new renewTime, from the Lease last written when there is
// one, else from the API server's (created when missing). A conflict means
// someone else wrote it: read it again and retry at once.
func (r *LeaseRenewer) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RenewInterval)
	defer cancel()
	key := client.ObjectKey{Namespace: r.opts.Namespace, Name: r.opts.NodeName}
	var err error
	for range maxLeaseUpdateAttempts {
		lease := r.latest
		r.latest = nil
		if lease == nil {
			lease = &coordinationv1.Lease{}
			err = r.reader.Get(ctx, key, lease)
			if apierrors.IsNotFound(err) {
				lease = renewedLease(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
					r.opts.NodeName, r.nodeUID(ctx), r.opts.DurationSeconds, r.opts.Clock.Now())
				err = r.writer.Create(ctx, lease)
				if err == nil {
					r.latest = lease
					return nil
				}
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				return fmt.Errorf("creating lease %s: %w", key, err)
			}
			if err != nil {
				return fmt.Errorf("reading lease %s: %w", key, err)
			}
		}

		var uid types.UID
		if len(lease.OwnerReferences) == 0 {
			uid = r.nodeUID(ctx)
		}
		lease = renewedLease(lease, r.opts.NodeName, uid, r.opts.DurationSeconds, r.opts.Clock.Now())
		err = r.writer.Update(ctx, lease)
		if err == nil {
			r.latest = lease
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("updating lease %s: %w", key, err)
		}
	}
	return fmt.Errorf("renewing lease %s: %w", key, err)
}

// nodeUID is the Node's UID for the Lease's owner reference, or empty while
// the Node is not registered: the Lease is then written without one, and
// gets it on a later renewal.
func (r *LeaseRenewer) nodeUID(ctx context.Context) types.UID {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	if err := r.reader.Get(ctx, client.ObjectKey{Name: r.opts.NodeName}, node); err != nil {
		return ""
	}
	return node.UID
}

// renewedLease is lease held by the node and renewed at now. An owner
// reference to the Node (nodeUID, when known) is set when the Lease has
// none, as the kubelet does: deleting the Node then deletes its Lease.
func renewedLease(lease *coordinationv1.Lease, nodeName string, nodeUID types.UID, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	lease = lease.DeepCopy()
	lease.Spec.HolderIdentity = ptr.To(nodeName)
	lease.Spec.LeaseDurationSeconds = ptr.To(durationSeconds)
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(now))
	if len(lease.OwnerReferences) == 0 && nodeUID != "" {
		lease.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: corev1.SchemeGroupVersion.String(),
			Kind:       "Node",
			Name:       nodeName,
			UID:        nodeUID,
		}}
	}
	return lease
}
