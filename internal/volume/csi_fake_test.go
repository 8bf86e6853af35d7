package volume

import (
	"context"
	"errors"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// fakeCSINode is a node service that records its calls, and fails those
// named in fail.
type fakeCSINode struct {
	csipb.NodeClient
	mu    sync.Mutex
	calls []string
	fail  map[string]bool
	// publishes are the NodePublishVolume requests it got.
	publishes []*csipb.NodePublishVolumeRequest
	// caps are its capabilities beyond STAGE_UNSTAGE_VOLUME; stats is
	// what NodeGetVolumeStats answers (csi_stats_test.go).
	caps  []csipb.NodeServiceCapability_RPC_Type
	stats fakeCSIStats
	// stages are the NodeStageVolume requests it got; onPublish and
	// onUnpublish, when set, do the driver's work on the node.
	stages                 []*csipb.NodeStageVolumeRequest
	onPublish, onUnpublish func(target string) error
}

func (f *fakeCSINode) record(call string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	if f.fail[call] {
		return errors.New(call + " failed")
	}
	return nil
}

func (f *fakeCSINode) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	calls := f.calls
	f.calls = nil
	return calls
}

func (f *fakeCSINode) NodeGetCapabilities(context.Context, *csipb.NodeGetCapabilitiesRequest, ...grpc.CallOption) (*csipb.NodeGetCapabilitiesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var caps []*csipb.NodeServiceCapability
	for _, c := range append([]csipb.NodeServiceCapability_RPC_Type{csipb.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}, f.caps...) {
		caps = append(caps, &csipb.NodeServiceCapability{Type: &csipb.NodeServiceCapability_Rpc{Rpc: &csipb.NodeServiceCapability_RPC{Type: c}}})
	}
	return &csipb.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (f *fakeCSINode) NodeStageVolume(_ context.Context, req *csipb.NodeStageVolumeRequest, _ ...grpc.CallOption) (*csipb.NodeStageVolumeResponse, error) {
	f.mu.Lock()
	f.stages = append(f.stages, req)
	f.mu.Unlock()
	return &csipb.NodeStageVolumeResponse{}, f.record("NodeStageVolume " + req.VolumeId)
}

func (f *fakeCSINode) NodeUnstageVolume(_ context.Context, req *csipb.NodeUnstageVolumeRequest, _ ...grpc.CallOption) (*csipb.NodeUnstageVolumeResponse, error) {
	return &csipb.NodeUnstageVolumeResponse{}, f.record("NodeUnstageVolume " + req.VolumeId)
}

func (f *fakeCSINode) NodePublishVolume(_ context.Context, req *csipb.NodePublishVolumeRequest, _ ...grpc.CallOption) (*csipb.NodePublishVolumeResponse, error) {
	f.mu.Lock()
	f.publishes = append(f.publishes, req)
	f.mu.Unlock()
	if err := f.record("NodePublishVolume " + req.VolumeId); err != nil {
		return nil, err
	}
	if f.onPublish != nil {
		return &csipb.NodePublishVolumeResponse{}, f.onPublish(req.TargetPath)
	}
	return &csipb.NodePublishVolumeResponse{}, nil
}

func (f *fakeCSINode) NodeUnpublishVolume(_ context.Context, req *csipb.NodeUnpublishVolumeRequest, _ ...grpc.CallOption) (*csipb.NodeUnpublishVolumeResponse, error) {
	if f.onUnpublish != nil {
		if err := f.onUnpublish(req.TargetPath); err != nil {
			return nil, err
		}
	}
	return &csipb.NodeUnpublishVolumeResponse{}, f.record("NodeUnpublishVolume " + req.VolumeId)
}

// fakeCSIDrivers has the fake registered as mock.csi when registered.
type fakeCSIDrivers struct {
	node       *fakeCSINode
	registered bool
}

func (d *fakeCSIDrivers) NodeClient(name string) (csipb.NodeClient, error) {
	if !d.registered || name != "mock.csi" {
		return nil, errors.New("driver name " + name + " not found in the list of registered CSI drivers")
	}
	return d.node, nil
}
