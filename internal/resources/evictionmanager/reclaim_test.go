package evictionmanager

// Reclaiming disk before evicting, with recording stand-ins for the
// container and image collectors and observations made up in the test.

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodelet/nodelet/internal/resources/eviction"
)

type containerReclaimerFunc func() int

func (f containerReclaimerFunc) DeleteAllUnusedContainers(context.Context) (int, error) {
	return f(), nil
}

type imageReclaimerFunc func()

func (f imageReclaimerFunc) DeleteUnusedImages(context.Context) error {
	f()
	return nil
}

func TestReclaimNodeLevelResources(t *testing.T) {
	nodefs := eviction.Threshold{Signal: eviction.SignalNodeFsAvailable, Operator: eviction.OpLessThan, Value: eviction.ThresholdValue{Quantity: resource.NewQuantity(1<<30, resource.BinarySI)}}
	memory := eviction.Threshold{Signal: eviction.SignalMemoryAvailable, Operator: eviction.OpLessThan, Value: eviction.ThresholdValue{Quantity: resource.NewQuantity(100<<20, resource.BinarySI)}}
	available := func(bytes int64) eviction.Observations {
		return eviction.Observations{eviction.SignalNodeFsAvailable: {
			Available: *resource.NewQuantity(bytes, resource.BinarySI),
			Capacity:  *resource.NewQuantity(10<<30, resource.BinarySI),
			Time:      time.Unix(1, 0),
		}}
	}
	for name, tc := range map[string]struct {
		threshold         eviction.Threshold
		containersRemoved int
		afterReclaim      eviction.Observations
		wantCalls         []string
		wantNoEviction    bool
	}{
		"dead containers removed: images too, then no eviction before the next round observes what the runtime freed": {
			threshold: nodefs, containersRemoved: 3, afterReclaim: available(0),
			wantCalls: []string{"containers", "images"}, wantNoEviction: true,
		},
		"nothing dead, images freed enough: no eviction": {
			threshold: nodefs, afterReclaim: available(2 << 30),
			wantCalls: []string{"containers", "images", "observe"}, wantNoEviction: true,
		},
		"nothing dead, still short after the images: a pod is evicted": {
			threshold: nodefs, afterReclaim: available(1 << 20),
			wantCalls: []string{"containers", "images", "observe"},
		},
		"memory is not reclaimed from disk": {
			threshold: memory, afterReclaim: available(2 << 30),
		},
	} {
		t.Run(name, func(t *testing.T) {
			var calls []string
			m := &Manager{opts: Options{
				Containers: containerReclaimerFunc(func() int { calls = append(calls, "containers"); return tc.containersRemoved }),
				Images:     imageReclaimerFunc(func() { calls = append(calls, "images") }),
				Log:        logr.Discard(),
			}}
			noEviction := m.reclaimNodeLevelResources(context.Background(), tc.threshold, func() eviction.Observations {
				calls = append(calls, "observe")
				return tc.afterReclaim
			})
			if noEviction != tc.wantNoEviction {
				t.Errorf("reclaimNodeLevelResources() = %v, want %v", noEviction, tc.wantNoEviction)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}
