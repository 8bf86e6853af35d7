package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type plugin struct {
	name, nodeID, topologyKey string
	maxVolumes                int64
	dataDir, hooksDir         string

	mu sync.Mutex
	// published maps each target path to the staging path it was
	// published from.
	published map[string]string
}

// hook fails the call while the test's fail-<method> file exists.
func (p *plugin) hook(method string) error {
	if p.hooksDir == "" {
		return nil
	}
	if _, err := os.Stat(filepath.Join(p.hooksDir, "fail-"+method)); err == nil {
		return status.Errorf(codes.Unavailable, "%s failed: injected by the test", method)
	}
	return nil
}

func (i *identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: i.plugin.name, VendorVersion: "0.1.0"}, nil
}

func (i *identity) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{}, nil
}

func (i *identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

type node struct {
	csi.UnimplementedNodeServer
	plugin *plugin
}

func (n *node) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	if err := n.plugin.hook("NodeGetInfo"); err != nil {
		return nil, err
	}
	return &csi.NodeGetInfoResponse{
		NodeId:             n.plugin.nodeID,
		MaxVolumesPerNode:  n.plugin.maxVolumes,
		AccessibleTopology: &csi.Topology{Segments: map[string]string{n.plugin.topologyKey: n.plugin.nodeID}},
	}, nil
}

func (n *node) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, c := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		volumeConditionRPC,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: c}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

func (n *node) NodeStageVolume(_ context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	if err := n.plugin.hook("NodeStageVolume"); err != nil {
		return nil, err
	}
	if req.GetVolumeId() == "" || req.GetStagingTargetPath() == "" || req.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume ID, staging target path and capability are required")
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		if err := stageBlock(n.plugin.dataDir, req.GetVolumeId(), req.GetStagingTargetPath()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.NodeStageVolumeResponse{}, nil
	}
	source := filepath.Join(n.plugin.dataDir, filepath.Base(req.GetVolumeId()))
	if err := os.MkdirAll(source, 0o777); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := bindMount(source, req.GetStagingTargetPath(), false); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

func (n *node) NodeUnstageVolume(_ context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if err := n.plugin.hook("NodeUnstageVolume"); err != nil {
		return nil, err
	}
	staging := req.GetStagingTargetPath()
	n.plugin.mu.Lock()
	for target, from := range n.plugin.published {
		if from == staging {
			n.plugin.mu.Unlock()
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published at %s", req.GetVolumeId(), target)
		}
	}
	n.plugin.mu.Unlock()
	if block, err := unstageBlock(staging); block {
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.NodeUnstageVolumeResponse{}, nil
	}
	if err := unmount(staging); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (n *node) NodePublishVolume(_ context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if err := n.plugin.hook("NodePublishVolume"); err != nil {
		return nil, err
	}
	staging, target := req.GetStagingTargetPath(), req.GetTargetPath()
	if req.GetVolumeId() == "" || staging == "" || target == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID, staging target path and target path are required")
	}
	if err := checkTokens(req.GetVolumeId(), req.GetVolumeContext()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if req.GetVolumeCapability().GetBlock() != nil {
		if err := publishBlock(staging, target, req.GetReadonly()); err != nil {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
	} else {
		if mounted, err := isMountPoint(staging); err != nil || !mounted {
			return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", req.GetVolumeId(), staging)
		}
		if err := os.MkdirAll(target, 0o750); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		if err := bindMount(staging, target, req.GetReadonly()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	n.plugin.mu.Lock()
	n.plugin.published[target] = staging
	n.plugin.mu.Unlock()
	return &csi.NodePublishVolumeResponse{}, nil
}

func (n *node) NodeUnpublishVolume(_ context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if err := n.plugin.hook("NodeUnpublishVolume"); err != nil {
		return nil, err
	}
	target := req.GetTargetPath()
	if err := unmount(target); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return nil, status.Error(codes.Internal, err.Error())
	}
	n.plugin.mu.Lock()
	delete(n.plugin.published, target)
	n.plugin.mu.Unlock()
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// bindMount mounts source on target unless target is a mount point
// already (the call repeated).
func bindMount(source, target string, readOnly bool) error {
	if mounted, err := isMountPoint(target); err != nil || mounted {
		return err
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return &os.PathError{Op: "bind mount " + source + " on", Path: target, Err: err}
	}
	if readOnly {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return &os.PathError{Op: "remount read-only", Path: target, Err: err}
		}
	}
	return nil
}

// unmount unmounts target when it is a mount point; a path that is not
// (the call repeated) is fine.
func unmount(target string) error {
	mounted, err := isMountPoint(target)
	if err != nil || !mounted {
		return err
	}
	return unix.Unmount(target, 0)
}

// isMountPoint compares target's device with its parent's; a bind mount
// of a folder of the same file system is found in mountinfo's root
// instead, so both are checked through the mount ID.
func isMountPoint(target string) (bool, error) {
	var self, parent unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, target, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &self); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := unix.Statx(unix.AT_FDCWD, filepath.Dir(target), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &parent); err != nil {
		return false, err
	}
	return self.Mnt_id != parent.Mnt_id, nil
}
