// Package runtime is everything nodelet says to the container runtime
// through CRI: reading the runtime's records back into PodStatus, deciding
// what a pod needs (ComputePodActions) and carrying that out (SyncPod,
// KillPod), the Pod → CRI config mapping, and image pulls.
//
// Other packages import it as noderuntime, to keep it apart from Go's
// runtime and apimachinery's.
package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/resources/userns"
)

// Config holds the Manager's settings.
type Config struct {
	// PodLogDir is where pod log folders are made
	// (<PodLogDir>/<namespace>_<name>_<uid>/<container>/<restart>.log).
	PodLogDir string
	// ContainerLogDir holds the <pod>_<namespace>_<container>-<id>.log links
	// that log shippers read (the kubelet's /var/log/containers).
	ContainerLogDir string
	// RuntimeClasses resolves a pod's runtimeClassName to the runtime
	// handler its sandbox is made with; nil leaves every pod on the
	// default handler.
	RuntimeClasses RuntimeClasses
	// UserNamespaces gives each pod with hostUsers: false its range of
	// host IDs (package userns' Manager); nil refuses such pods.
	UserNamespaces UserNamespaces
	// ResolvConf is the host's resolver configuration that pods with the
	// Default DNS policy (and ClusterFirst, when there is no cluster DNS)
	// inherit. Empty gives pods none of the host's: those pods resolve
	// through the local machine, as the kubelet's do.
	ResolvConf string
	// NodeIP is the --node-ip the node was given, if any: with no
	// ResolvConf, an IPv6 one makes the local resolver ::1.
	NodeIP string
	// ClusterDNS is the cluster's DNS service, which ClusterFirst pods
	// resolve through; its domain also makes the FQDN of pods with a
	// subdomain.
	ClusterDNS ClusterDNS
	// HostsFile is the node's hosts file, which pods on the host's network
	// get (with their hostAliases) as /etc/hosts. Empty means /etc/hosts.
	HostsFile string
	// NodeName names the Node in the events about it (MissingClusterDNS).
	NodeName string
	// SandboxIPs, when set, gives the addresses nodelet itself handed a
	// sandbox (the agent network mode); they stand in for the ones the
	// runtime reports. known is false for a sandbox it did not network.
	SandboxIPs func(sandboxID string) (ips []string, known bool)
	// ParallelSandboxStarts is how many RunPodSandbox calls may be in
	// flight at once; zero or less means two per CPU.
	ParallelSandboxStarts int
	// Resizes keeps what in-place resizes applied to running containers
	// (package allocation's Store); nil keeps nothing, and resizes are
	// then applied again after a restart.
	Resizes ResizeRecord
	// PrepareSubPath makes a volume mount's sub path safe to mount and
	// returns the path to hand the runtime: package volume's
	// PrepareSubPath (a bind mount under the pod's folder; needs root),
	// which the runtime, below the volume manager, is handed rather than
	// calls. Unset, a mount with a sub path fails.
	PrepareSubPath func(kubecontainer.SubPath) (string, error)
	// HostPaths says where the runtime finds the host's paths nodelet
	// hands it. Default: the runtime runs on the host, every path as it
	// is.
	HostPaths HostPaths
	// OOMKills, when set, tells which containers the kernel's log says the
	// OOM killer killed (package oomwatch): their exit is OOMKilled even
	// where the runtime's report says Error.
	OOMKills OOMKills
}

// OOMKills knows the containers the kernel OOM-killed (package oomwatch).
type OOMKills interface {
	Killed(containerID string) bool
}

// RuntimeClasses resolves RuntimeClass names to runtime handlers (package
// runtimeclass).
type RuntimeClasses interface {
	Handler(ctx context.Context, runtimeClassName string) (string, error)
}

// UserNamespaces hands out pods' user namespace ranges (package userns).
type UserNamespaces interface {
	PodRange(uid types.UID) (userns.Range, error)
}

// Manager carries out pod plans through CRI. It keeps no state a restart
// would lose, apart from image pull back-off (as the kubelet).
type Manager struct {
	runtime cri.RuntimeService
	images  cri.ImageManagerService
	config  Config
	// host is what the host's memory, cgroup version and huge pages make
	// of a container's resources.
	host     hostResources
	recorder record.EventRecorder
	clock    clock.Clock
	log      logr.Logger

	// runtimeName prefixes container IDs ("containerd://...").
	runtimeName string
	puller      *imagePuller
	// sandboxStarts admits RunPodSandbox calls first come, first served.
	// A burst of a hundred pods then does not ask the runtime for a
	// hundred sandboxes at once, where each waits on all the others and
	// every pod is Ready late: the first pods get theirs soon and go on
	// to their containers (never held back) while the later ones wait
	// their turn. Stopping a pod never waits here.
	sandboxStarts *semaphore.Weighted
	// stops are the containers nodelet asked to stop: their SIGKILL is
	// nodelet's, not the OOM killer's.
	stops stopRequests
	// readySandboxes spares a status call for every read of a ready
	// sandbox but the first.
	readySandboxes readySandboxes
}

// prepareSubPath is the volume mount's sub path as the runtime is to mount it.
func (m *Manager) prepareSubPath(sp kubecontainer.SubPath) (string, error) {
	if m.config.PrepareSubPath == nil {
		// A sub path handed on unchecked could lead, through a symlink
		// the container made, anywhere on the node.
		return "", errors.New("no sub path preparer is configured")
	}
	return m.config.PrepareSubPath(sp)
}

// NewManager asks the runtime who it is and returns a Manager for it.
func NewManager(ctx context.Context, runtimeService cri.RuntimeService, imageService cri.ImageManagerService, config Config, recorder record.EventRecorder, clk clock.Clock, log logr.Logger) (*Manager, error) {
	version, err := runtimeService.Version(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("getting the container runtime version: %w", err)
	}
	return &Manager{
		runtime:       runtimeService,
		images:        imageService,
		config:        config,
		host:          hostResourcesOnce(),
		recorder:      recorder,
		clock:         clk,
		log:           log,
		runtimeName:   version.RuntimeName,
		puller:        newImagePuller(imageService, recorder, clk),
		sandboxStarts: semaphore.NewWeighted(int64(parallelSandboxStarts(config.ParallelSandboxStarts))),
	}, nil
}

// parallelSandboxStarts is the limit on RunPodSandbox calls in flight:
// the configured one, or two per CPU. Creating a sandbox (namespaces, the
// pause container, the CNI plugins) keeps the node's CPUs busy.
func parallelSandboxStarts(configured int) int {
	if configured > 0 {
		return configured
	}
	return 2 * goruntime.NumCPU()
}

// RuntimeName is the runtime's name as CRI Version reports it.
func (m *Manager) RuntimeName() string { return m.runtimeName }

// ListPods reads the runtime's whole record of nodelet's pods with two list
// calls, without the per-object status calls GetPodStatus makes: what a
// relist needs to tell which pods changed. Exit codes and IPs are not
// filled in.
func (m *Manager) ListPods(ctx context.Context) (map[types.UID]*kubecontainer.PodStatus, error) {
	sandboxes, err := m.runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	containers, err := m.runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	pods := map[types.UID]*kubecontainer.PodStatus{}
	pod := func(labels map[string]string) *kubecontainer.PodStatus {
		id, ok := identityFromLabels(labels)
		if !ok {
			return nil
		}
		p := pods[id.UID]
		if p == nil {
			p = &kubecontainer.PodStatus{UID: id.UID, Name: id.Name, Namespace: id.Namespace}
			pods[id.UID] = p
		}
		return p
	}
	for _, sb := range sandboxes {
		if p := pod(sb.Labels); p != nil {
			p.Sandboxes = append(p.Sandboxes, sandboxFromList(sb))
		}
	}
	for _, c := range containers {
		if p := pod(c.Labels); p != nil {
			cs := m.containerFromList(c)
			m.withResized(p.UID, cs)
			p.Containers = append(p.Containers, cs)
		}
	}
	for _, p := range pods {
		sortNewestFirst(p)
	}
	return pods, nil
}

func sandboxFromList(sb *runtimeapi.PodSandbox) *kubecontainer.SandboxStatus {
	return &kubecontainer.SandboxStatus{
		ID:        sb.Id,
		Attempt:   sb.GetMetadata().GetAttempt(),
		State:     sandboxState(sb.State),
		CreatedAt: time.Unix(0, sb.CreatedAt),
	}
}

func sandboxFromStatus(s *runtimeapi.PodSandboxStatus) *kubecontainer.SandboxStatus {
	sandbox := &kubecontainer.SandboxStatus{
		ID:          s.Id,
		Attempt:     s.GetMetadata().GetAttempt(),
		State:       sandboxState(s.State),
		CreatedAt:   time.Unix(0, s.CreatedAt),
		HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
	}
	if ip := s.GetNetwork().GetIp(); ip != "" {
		sandbox.IPs = append(sandbox.IPs, ip)
	}
	for _, extra := range s.GetNetwork().GetAdditionalIps() {
		if extra.GetIp() != "" {
			sandbox.IPs = append(sandbox.IPs, extra.GetIp())
		}
	}
	return sandbox
}

func sandboxState(state runtimeapi.PodSandboxState) kubecontainer.SandboxState {
	if state == runtimeapi.PodSandboxState_SANDBOX_READY {
		return kubecontainer.SandboxReady
	}
	return kubecontainer.SandboxNotReady
}

func (m *Manager) containerFromList(c *runtimeapi.Container) *kubecontainer.ContainerStatus {
	info := decodeContainerAnnotations(c.Annotations)
	return &kubecontainer.ContainerStatus{
		ID:                     kubecontainer.ContainerID{Type: m.runtimeName, ID: c.Id},
		Name:                   c.Labels[kubecontainer.LabelContainerName],
		SandboxID:              c.PodSandboxId,
		State:                  containerState(c.State),
		CreatedAt:              time.Unix(0, c.CreatedAt),
		Image:                  c.GetImage().GetImage(),
		ImageRef:               c.ImageRef,
		Hash:                   info.Hash,
		RestartCount:           info.RestartCount,
		RestartBackoff:         info.RestartBackoff,
		TerminationGracePeriod: info.TerminationGracePeriod,
		Actuated:               info.actuated(),
	}
}

func (m *Manager) containerFromStatus(sandboxID string, s *runtimeapi.ContainerStatus) *kubecontainer.ContainerStatus {
	info := decodeContainerAnnotations(s.Annotations)
	cs := &kubecontainer.ContainerStatus{
		ID:                     kubecontainer.ContainerID{Type: m.runtimeName, ID: s.Id},
		Name:                   s.Labels[kubecontainer.LabelContainerName],
		SandboxID:              sandboxID,
		State:                  containerState(s.State),
		CreatedAt:              unixNanoTime(s.CreatedAt),
		StartedAt:              unixNanoTime(s.StartedAt),
		FinishedAt:             unixNanoTime(s.FinishedAt),
		ExitCode:               s.ExitCode,
		Reason:                 s.Reason,
		Message:                s.Message,
		Image:                  s.GetImage().GetImage(),
		ImageRef:               s.ImageRef,
		Hash:                   info.Hash,
		RestartCount:           info.RestartCount,
		RestartBackoff:         info.RestartBackoff,
		TerminationGracePeriod: info.TerminationGracePeriod,
		Resources:              appliedResources(s.GetResources()),
		Actuated:               info.actuated(),
		LogPath:                s.LogPath,
	}
	if cs.State == kubecontainer.ContainerExited {
		cs.Message = withTerminationMessage(cs.Message, s, info)
	}
	return cs
}

func containerState(state runtimeapi.ContainerState) kubecontainer.ContainerState {
	switch state {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return kubecontainer.ContainerCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return kubecontainer.ContainerRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return kubecontainer.ContainerExited
	default:
		return kubecontainer.ContainerUnknown
	}
}

func unixNanoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func sortNewestFirst(status *kubecontainer.PodStatus) {
	sort.SliceStable(status.Sandboxes, func(i, j int) bool {
		return status.Sandboxes[i].CreatedAt.After(status.Sandboxes[j].CreatedAt)
	})
	sort.SliceStable(status.Containers, func(i, j int) bool {
		return status.Containers[i].CreatedAt.After(status.Containers[j].CreatedAt)
	})
}

// WatchContainerEvents streams the runtime's container events, calling
// onEvent with the pod each concerns, until ctx ends or the stream fails.
// A runtime without events (containerd 1.6) answers codes.Unimplemented.
func (m *Manager) WatchContainerEvents(ctx context.Context, onEvent func(kubecontainer.PodIdentity)) error {
	events := make(chan *runtimeapi.ContainerEventResponse, 64)
	done := make(chan error, 1)
	go func() { done <- m.runtime.GetContainerEvents(ctx, events, nil) }()
	for {
		select {
		case e := <-events:
			md := e.GetPodSandboxStatus().GetMetadata()
			if md.GetUid() != "" {
				onEvent(kubecontainer.PodIdentity{UID: types.UID(md.GetUid()), Name: md.GetName(), Namespace: md.GetNamespace()})
			}
		case err := <-done:
			return err
		}
	}
}
