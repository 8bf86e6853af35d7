package imagegc

// The image garbage collection policy, the kubelet's: pure decisions over
// the images as the manager last saw them, with the time passed in.

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Policy is the kubelet's ImageGCPolicy.
type Policy struct {
	// HighThresholdPercent is the image file system's usage at or above
	// which images are removed.
	HighThresholdPercent int
	// LowThresholdPercent is the usage removal frees down to.
	LowThresholdPercent int
	// MinAge is how long an image must have been on the node before it
	// may be removed for space.
	MinAge time.Duration
	// MaxAge removes images unused for longer, whatever the usage; 0 is
	// never.
	MaxAge time.Duration
}

// Disabled says whether the policy never removes anything: a high
// threshold of 100 and no maximum age, as the kubelet reads them.
func (p Policy) Disabled() bool {
	return p.HighThresholdPercent >= 100 && p.MaxAge == 0
}

// Image is one image as the manager tracks it.
type Image struct {
	// ID is the runtime's image ID, what RemoveImage takes.
	ID   string
	Size int64
	// FirstDetected is when the manager first saw the image.
	FirstDetected time.Time
	// LastUsed is when a container using it was last seen; zero if never.
	LastUsed time.Time
	// InUse: a container of any state uses it now.
	InUse bool
	// Pinned: the runtime asks that it stay (CRI Image.pinned), or it is
	// the runtime's sandbox image.
	Pinned bool
}

// FsUsage is the image file system's size and free space.
type FsUsage struct {
	CapacityBytes  int64
	AvailableBytes int64
}

// Plan is what one collection does.
type Plan struct {
	// ByAge are removed first: unused for longer than MaxAge.
	ByAge []Image
	// Candidates are then the images that may go for space, least
	// recently used first; they are removed in order until Freed reaches
	// AmountToFree (a failed removal frees nothing and the next is tried).
	Candidates []Image
	// UsagePercent is the image file system's usage.
	UsagePercent int
	// AmountToFree is how much must go to reach the low threshold; zero
	// when the usage is under the high threshold.
	AmountToFree int64
}

// ErrInvalidCapacity is a file system reported with no capacity.
var ErrInvalidCapacity = errors.New("invalid capacity 0 on image filesystem")

// EvictionOrder is the images that may be removed at all, neither in use
// nor pinned, least recently used first, then first detected first.
func EvictionOrder(images []Image) []Image {
	var order []Image
	for _, image := range images {
		if image.InUse || image.Pinned {
			continue
		}
		order = append(order, image)
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].LastUsed.Equal(order[j].LastUsed) {
			return order[i].FirstDetected.Before(order[j].FirstDetected)
		}
		return order[i].LastUsed.Before(order[j].LastUsed)
	})
	return order
}

// Decide plans one collection at now, the kubelet's GarbageCollect:
// images unused longer than MaxAge go (once the collector has run for
// MaxAge, since before that the last-used times start at its start); then,
// if the usage is at or above the high threshold, enough of the rest to
// bring it to the low threshold, sparing the images used at now and those
// detected less than MinAge ago. began is when the collector started.
func (p Policy) Decide(images []Image, fs FsUsage, now, began time.Time) (Plan, error) {
	order := EvictionOrder(images)
	var plan Plan
	if p.MaxAge > 0 && now.Sub(began) > p.MaxAge {
		var rest []Image
		for _, image := range order {
			if now.Sub(image.LastUsed) > p.MaxAge {
				plan.ByAge = append(plan.ByAge, image)
				continue
			}
			rest = append(rest, image)
		}
		order = rest
	}

	capacity, available := fs.CapacityBytes, min(fs.AvailableBytes, fs.CapacityBytes)
	if capacity <= 0 {
		return plan, ErrInvalidCapacity
	}
	plan.UsagePercent = 100 - int(available*100/capacity)
	if plan.UsagePercent < p.HighThresholdPercent {
		return plan, nil
	}
	plan.AmountToFree = capacity*int64(100-p.LowThresholdPercent)/100 - available
	for _, image := range order {
		if !image.LastUsed.Before(now) {
			continue
		}
		if now.Sub(image.FirstDetected) < p.MinAge {
			continue
		}
		plan.Candidates = append(plan.Candidates, image)
	}
	return plan, nil
}

// Removals is what the plan removes for space when every removal
// succeeds: the candidates until their sizes reach AmountToFree.
func (plan Plan) Removals() []Image {
	var removed []Image
	var freed int64
	for _, image := range plan.Candidates {
		if freed >= plan.AmountToFree {
			break
		}
		removed = append(removed, image)
		freed += image.Size
	}
	return removed
}

// FreeDiskSpaceFailedMessage is the kubelet's FreeDiskSpaceFailed event
// message, when the removals freed less than needed.
func FreeDiskSpaceFailedMessage(usagePercent int, capacity, freed int64) string {
	return fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
		"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
		usagePercent, formatSize(capacity), freed)
}

func formatSize(size int64) string {
	const (
		kib = 1024
		mib = 1024 * kib
		gib = 1024 * mib
		tib = 1024 * gib
	)
	f := float64(size)
	switch {
	case size < kib:
		return fmt.Sprintf("%d B", size)
	case size < mib:
		return fmt.Sprintf("%.1f KiB", f/kib)
	case size < gib:
		return fmt.Sprintf("%.1f MiB", f/mib)
	case size < tib:
		return fmt.Sprintf("%.1f GiB", f/gib)
	default:
		return fmt.Sprintf("%.1f TiB", f/tib)
	}
}
