package imagegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/node"
)

// Period is how often images are collected, the kubelet's ImageGCPeriod.
const Period = 5 * time.Minute

// The kubelet's event reasons on the Node.
const (
	ReasonImageGCFailed       = "ImageGCFailed"
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
)

// ImageService is what the manager asks of the runtime's image service;
// cri.ImageManagerService has it.
type ImageService interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// RuntimeService is what the manager asks of the runtime service:
// the containers (every state), and its status, whose verbose info names
// the sandbox image; cri.RuntimeService has it.
type RuntimeService interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// Options configure the Manager.
type Options struct {
	// Policy is when and what to collect.
	Policy Policy
	// NodeName is the Node the events are on.
	NodeName string
	// Recorder records the events. Required.
	Recorder record.EventRecorder
	// Period is how often images are collected. Default: Period.
	Period time.Duration
	// FsUsage reads the size and free space of the file system mounted at
	// mountpoint. Default: statfs.
	FsUsage func(mountpoint string) (FsUsage, error)
	// Clock is the time source. Default: the real clock.
	Clock clock.WithTicker
	// Log is the manager's logger. Default: discards.
	Log logr.Logger
}

// record is what the manager knows of one image, in memory only as the
// kubelet keeps it: a restart detects every image anew.
type imageRecord struct {
	firstDetected time.Time
	lastUsed      time.Time
}

// Manager collects unused images by the policy: a manager.Runnable that
// runs a collection at start and every Period.
type Manager struct {
	images  ImageService
	runtime RuntimeService
	opts    Options

	mu      sync.Mutex
	records map[string]*imageRecord
	began   time.Time
}

// NewManager returns a manager over the runtime's services.
func NewManager(images ImageService, runtime RuntimeService, opts Options) *Manager {
	if opts.Period <= 0 {
		opts.Period = Period
	}
	if opts.FsUsage == nil {
		opts.FsUsage = statfsUsage
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Manager{images: images, runtime: runtime, opts: opts, records: map[string]*imageRecord{}}
}

// NeedLeaderElection is false: every node collects its own images.
func (m *Manager) NeedLeaderElection() bool { return false }

// Start collects images now and every Period until ctx ends. A failed
// collection is logged; failing twice in a row is an ImageGCFailed event
// on the Node, as the kubelet records it.
func (m *Manager) Start(ctx context.Context) error {
	if m.opts.Policy.Disabled() {
		m.opts.Log.V(2).Info("Image garbage collection is off: the high threshold is 100 and there is no maximum age")
		return nil
	}
	m.began = m.opts.Clock.Now()
	ticker := m.opts.Clock.NewTicker(m.opts.Period)
	defer ticker.Stop()
	failedBefore := false
	for {
		if err := m.GarbageCollect(ctx); err != nil {
			if failedBefore {
				m.opts.Log.Error(err, "Image garbage collection failed multiple times in a row")
				m.opts.Recorder.Event(m.nodeRef(), corev1.EventTypeWarning, ReasonImageGCFailed, err.Error())
			} else {
				m.opts.Log.Error(err, "Image garbage collection failed once")
			}
			failedBefore = true
		} else {
			m.opts.Log.V(4).Info("Image garbage collection succeeded")
			failedBefore = false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

func (m *Manager) nodeRef() *corev1.ObjectReference { return node.Ref(m.opts.NodeName) }

// GarbageCollect runs one collection: it detects the images and the ones
// in use, removes those the policy picks, and says when it could not free
// enough (with a FreeDiskSpaceFailed event).
func (m *Manager) GarbageCollect(ctx context.Context) error {
	now := m.opts.Clock.Now()
	images, err := m.detectImages(ctx, now)
	if err != nil {
		return err
	}
	fs, err := m.imageFsUsage(ctx)
	if err != nil {
		return err
	}
	plan, err := m.opts.Policy.Decide(images, fs, now, m.began)
	if errors.Is(err, ErrInvalidCapacity) {
		m.opts.Recorder.Event(m.nodeRef(), corev1.EventTypeWarning, ReasonInvalidDiskCapacity, err.Error())
	}
	var removeErrs []error
	for _, image := range plan.ByAge {
		m.opts.Log.Info("Removing image unused for longer than the maximum age", "imageID", image.ID, "size", image.Size, "lastUsed", image.LastUsed)
		if rmErr := m.remove(ctx, image); rmErr != nil {
			removeErrs = append(removeErrs, rmErr)
		}
	}
	if len(removeErrs) > 0 {
		return fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", m.opts.Policy.MaxAge, errors.Join(removeErrs...))
	}
	if err != nil || plan.UsagePercent < m.opts.Policy.HighThresholdPercent {
		return err
	}
	m.opts.Log.Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", plan.UsagePercent, "highThreshold", m.opts.Policy.HighThresholdPercent, "amountToFree", plan.AmountToFree, "lowThreshold", m.opts.Policy.LowThresholdPercent)
	var freed int64
	for _, image := range plan.Candidates {
		if freed >= plan.AmountToFree {
			break
		}
		m.opts.Log.Info("Removing image to free bytes", "imageID", image.ID, "size", image.Size)
		if rmErr := m.remove(ctx, image); rmErr != nil {
			removeErrs = append(removeErrs, rmErr)
			continue
		}
		freed += image.Size
	}
	if len(removeErrs) > 0 {
		return fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", plan.AmountToFree, freed, errors.Join(removeErrs...))
	}
	if freed < plan.AmountToFree {
		message := FreeDiskSpaceFailedMessage(plan.UsagePercent, fs.CapacityBytes, freed)
		m.opts.Recorder.Event(m.nodeRef(), corev1.EventTypeWarning, ReasonFreeDiskSpaceFailed, message)
		return errors.New(message)
	}
	return nil
}

func (m *Manager) remove(ctx context.Context, image Image) error {
	if err := m.images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: image.ID}); err != nil && !crierrors.IsNotFound(err) {
		return fmt.Errorf("removing image %s: %w", image.ID, err)
	}
	m.mu.Lock()
	delete(m.records, image.ID)
	m.mu.Unlock()
	return nil
}

// detectImages lists the images and the containers (every state, as the
// kubelet counts them), updates the records — first detected, last used
// (now, for an image a container uses) — and returns the images as the
// policy takes them.
func (m *Manager) detectImages(ctx context.Context, now time.Time) ([]Image, error) {
	listed, err := m.images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	containers, err := m.runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	sandboxImage := m.sandboxImage(ctx)
	used := map[string]bool{}
	for _, c := range containers {
		used[c.GetImageRef()] = true
		used[c.GetImage().GetImage()] = true
	}
	named := func(image *runtimeapi.Image, names map[string]bool) bool {
		if names[image.GetId()] {
			return true
		}
		return slices.ContainsFunc(image.GetRepoTags(), func(s string) bool { return names[s] }) ||
			slices.ContainsFunc(image.GetRepoDigests(), func(s string) bool { return names[s] })
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	current := map[string]bool{}
	var images []Image
	for _, image := range listed {
		id := image.GetId()
		current[id] = true
		r, ok := m.records[id]
		if !ok {
			r = &imageRecord{firstDetected: now}
			m.records[id] = r
		}
		inUse := named(image, used)
		if inUse {
			r.lastUsed = now
		}
		images = append(images, Image{
			ID:            id,
			Size:          int64(image.GetSize()),
			FirstDetected: r.firstDetected,
			LastUsed:      r.lastUsed,
			InUse:         inUse,
			Pinned:        image.GetPinned() || sandboxImage != "" && named(image, map[string]bool{sandboxImage: true}),
		})
	}
	for id := range m.records {
		if !current[id] {
			delete(m.records, id)
		}
	}
	return images, nil
}

// sandboxImage is the runtime's pause image, from its verbose status
// (containerd's config.sandboxImage): kept even where the runtime does
// not pin it. Empty when the runtime does not say.
func (m *Manager) sandboxImage(ctx context.Context) string {
	status, err := m.runtime.Status(ctx, true)
	if err != nil {
		m.opts.Log.V(2).Info("Could not read the runtime's sandbox image", "err", err)
		return ""
	}
	var config struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if raw, ok := status.GetInfo()["config"]; ok && json.Unmarshal([]byte(raw), &config) == nil {
		return config.SandboxImage
	}
	return ""
}

// imageFsUsage is the image file system's size and free space: the one
// the runtime reports its images on, measured at its mount point.
func (m *Manager) imageFsUsage(ctx context.Context) (FsUsage, error) {
	info, err := m.images.ImageFsInfo(ctx)
	if err != nil {
		return FsUsage{}, fmt.Errorf("reading the image file system's usage: %w", err)
	}
	filesystems := info.GetImageFilesystems()
	if len(filesystems) == 0 {
		return FsUsage{}, errors.New("the runtime reports no image file system")
	}
	mountpoint := filesystems[0].GetFsId().GetMountpoint()
	usage, err := m.opts.FsUsage(mountpoint)
	if err != nil {
		return FsUsage{}, fmt.Errorf("reading the usage of image file system %s: %w", mountpoint, err)
	}
	return usage, nil
}

// DeleteUnusedImages removes every image no container uses that is past
// the policy's minimum age, as the kubelet's eviction manager asks its
// image manager before it evicts pods for disk.
func (m *Manager) DeleteUnusedImages(ctx context.Context) error {
	now := m.opts.Clock.Now()
	images, err := m.detectImages(ctx, now)
	if err != nil {
		return err
	}
	var removeErrs []error
	for _, image := range EvictionOrder(images) {
		if !image.LastUsed.Before(now) || now.Sub(image.FirstDetected) < m.opts.Policy.MinAge {
			continue
		}
		m.opts.Log.Info("Removing unused image under disk pressure", "imageID", image.ID, "size", image.Size)
		if rmErr := m.remove(ctx, image); rmErr != nil {
			removeErrs = append(removeErrs, rmErr)
		}
	}
	return errors.Join(removeErrs...)
}
