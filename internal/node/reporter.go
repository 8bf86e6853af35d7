// Package node is the Node's side of nodelet: the NodeStatusReporter that
// registers the Node and keeps its status true, and the LeaseRenewer that
// heartbeats its Lease (both manager.Runnables), over a pure node status
// computation and the machine's facts read from the host.
package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/api/config/v1alpha1"
)

// Defaults of NodeStatusOptions and LeaseOptions that the configuration
// file does not set (those it does come from package v1alpha1).
const (
	defaultNodeletVersion     = "v0.0.0-dev"
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

// ImageLister lists the runtime's images for status.images;
// cri.ImageManagerService has it.
type ImageLister interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
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
	// Allocatable is what is kept from pods: the Node's allocatable is its
	// capacity less it. Default: nothing.
	Allocatable AllocatableConfig
	// Labels are added to the Node's own (hostname, OS, architecture,
	// agent) when it is created, as the kubelet's --node-labels; a Node
	// that exists keeps its own, but for the kubelet's default labels
	// (the topology ones), set again at each start. Default: none.
	Labels map[string]string
	// RegisterWithTaints are the taints the Node is created with (the
	// kubelet's --register-with-taints); a Node that exists keeps its
	// own. Default: none.
	RegisterWithTaints []corev1.Taint
	// Images, when set, lists the runtime's images for status.images.
	// Default: nil, status.images left as it is.
	Images ImageLister
	// RootDir is nodelet's state folder; the file system holding it is the
	// node's ephemeral-storage capacity. Default: /var/lib/nodelet.
	RootDir string
	// NetworkStatus, when set, is nodelet's own part of the node's network
	// readiness (the agent network mode): nil when its CNI configuration is
	// usable. Default: nil, the runtime's NetworkReady alone.
	NetworkStatus func(ctx context.Context) error
	// Pressure, when set, is the pressure conditions the eviction manager
	// reports true. Default: nil, no pressure.
	Pressure func() []corev1.NodeConditionType
	// ShutdownStatus, when set, says why the node is not ready while it
	// shuts down (the shutdown manager's). Default: nil, never.
	ShutdownStatus func() error
	// Recorder, when set, records the Node's events: Rebooted, each
	// condition's change (NodeReady, NodeHasDiskPressure, ...), and the
	// RuntimeOutOfDate condition's transitions.
	Recorder record.EventRecorder
	// RuntimeRevision, when set, is the revision of the container runtime
	// its deployment wants (--runtime-revision), and RuntimeRevisionFile
	// the file in which the runtime recorded the one it was started with:
	// the Node's RuntimeOutOfDate condition says whether they differ.
	// Default: empty, no such condition.
	RuntimeRevision     string
	RuntimeRevisionFile string
	// VolumesInUse, when set, lists the attachable volumes the node's pods
	// use or are about to (status.volumesInUse, which the attach/detach
	// controller reads before it detaches). Default: nil, left as it is.
	VolumesInUse func() []corev1.UniqueVolumeName
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
	// syncNow asks the loop for a sync before its period is up.
	syncNow chan struct{}
	// rebootEvent records one Rebooted event per run, as the kubelet.
	rebootEvent sync.Once
}

// NewNodeStatusReporter returns a reporter that writes with c and reads the
// Node with it too, c being the manager's client whose cache watches the
// Node: every comparison is with the Node as the API server last sent it,
// so that a status someone else changed (Ready=Unknown after an outage) is
// noticed. reader, the manager's API reader, answers when the cache has
// no Node.
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
		opts.KubeletPort = v1alpha1.DefaultPort
	}
	if opts.MaxPods == 0 {
		opts.MaxPods = v1alpha1.DefaultMaxPods
	}
	if opts.RootDir == "" {
		opts.RootDir = v1alpha1.DefaultRootDir
	}
	if opts.UpdateFrequency <= 0 {
		opts.UpdateFrequency = v1alpha1.DefaultNodeStatusUpdateFrequency
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
	return &NodeStatusReporter{client: c, reader: reader, runtime: runtime, opts: opts, syncNow: make(chan struct{}, 1)}, nil
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

// SyncNow has the node's status computed and written at once (the
// shutdown manager's, as the node starts to shut down), without waiting
// for the next UpdateFrequency.
func (r *NodeStatusReporter) SyncNow() {
	select {
	case r.syncNow <- struct{}{}:
	default:
	}
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
// cannot be read or the reservations exceed them; API and runtime errors
// are logged and retried.
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
		allocatable:    r.opts.Allocatable,
		taints:         r.opts.RegisterWithTaints,
		labels:         r.opts.Labels,
	}
	if err := facts.allocatable.Validate(nodeCapacity(facts)); err != nil {
		return fmt.Errorf("node %s: %w", r.opts.NodeName, err)
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
		case <-r.syncNow:
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
		r.recordConditionEvents(nil, node.Status.Conditions)
	case apierrors.IsAlreadyExists(err):
		log.V(2).Info("Found the node registered already")
		if err := r.updateDefaultLabels(ctx, log, node); err != nil {
			return err
		}
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

// updateDefaultLabels brings the default labels of the Node that exists
// back to initial's, as the kubelet does each time it starts: a
// companion moved to another zone, or given another hostname, says so.
func (r *NodeStatusReporter) updateDefaultLabels(ctx context.Context, log logr.Logger, initial *corev1.Node) error {
	existing := &corev1.Node{}
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(initial), existing); err != nil {
		return fmt.Errorf("reading node %s: %w", initial.Name, err)
	}
	before := existing.DeepCopy()
	if !updateDefaultLabels(initial, existing) {
		return nil
	}
	if err := r.client.Patch(ctx, existing, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating the labels of node %s: %w", initial.Name, err)
	}
	log.Info("Updated the node's default labels", "labels", existing.Labels)
	return nil
}

// sync compares the status the node should have with the API server's and
// patches the difference. It reports whether the node is Ready.
func (r *NodeStatusReporter) sync(ctx context.Context, log logr.Logger, facts nodeFacts) bool {
	r.observeRuntime(ctx, log)

	ctx, cancel := context.WithTimeout(ctx, nodeCallTimeout)
	defer cancel()
	node := &corev1.Node{}
	key := client.ObjectKey{Name: r.opts.NodeName}
	// Like the kubelet (its node lister), read the Node from the
	// manager's cache: what the API server's watch last sent, so the
	// status is compared with what is there, not with what nodelet last
	// wrote, and no request is made each UpdateFrequency (at 10 s, six a
	// minute per node, which a cluster of thousands pays). The cache may
	// not hold a Node created a moment ago: then the API server's watch
	// cache is asked, and only etcd's answer says it is gone.
	err := r.client.Get(ctx, key, node)
	if apierrors.IsNotFound(err) {
		err = r.reader.Get(ctx, key, node, &client.GetOptions{Raw: &metav1.GetOptions{ResourceVersion: "0"}})
	}
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

	if Rebooted(node.Status.NodeInfo.BootID, facts.machine.BootID) && r.opts.Recorder != nil {
		// The Node still holds the boot ID of the boot before: the machine
		// has rebooted since nodelet last wrote it.
		r.rebootEvent.Do(func() {
			r.opts.Recorder.Eventf(Ref(r.opts.NodeName), corev1.EventTypeWarning, eventRebooted,
				"Node %s has been rebooted, boot id: %s", r.opts.NodeName, facts.machine.BootID)
		})
	}
	status, changed := nodeStatus(node, facts, r.lastRuntime, r.opts.Clock.Now(), r.opts.ReportFrequency)
	if changed {
		// The patch writes the API server's answer into node.
		before := node.Status.DeepCopy()
		if err := r.patchStatus(ctx, node, status); err != nil {
			log.Error(err, "Failed to update the node's status")
		} else {
			log.V(2).Info("Updated the node's status")
			r.recordConditionEvents(before.Conditions, status.Conditions)
			r.recordRuntimeRevision(log, *before, status)
		}
	}
	return nodeReady(status)
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
	if r.opts.Pressure != nil {
		r.lastRuntime.pressure = r.opts.Pressure()
	}
	if r.opts.ShutdownStatus != nil {
		r.lastRuntime.shutdownError = r.opts.ShutdownStatus()
	}
	r.observeRuntimeRevision()
	if r.opts.VolumesInUse != nil {
		r.lastRuntime.volumesInUse = r.opts.VolumesInUse()
		r.lastRuntime.volumesInUseRead = true
	}
	networkErr := networkNotReady(r.lastRuntime)
	r.networkErr.Store(&networkErr)
	if r.opts.Images != nil {
		// As the kubelet's image list, a failed read keeps the last one.
		if images, err := r.opts.Images.ListImages(ctx, nil); err != nil {
			log.Error(err, "Failed to list the container runtime's images")
		} else {
			r.lastRuntime.images, r.lastRuntime.imagesRead = images, true
		}
	}
}
