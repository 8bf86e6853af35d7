package main

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// NodeGetVolumeStats answers for a published volume as a real plugin
// whose volumes are folders of one disk would: capacity, what is
// available and the inodes from statfs of the published path, what is
// used from counting the volume's files (du), and the volume's condition
// (abnormal when the path is no longer a mount point).
func (n *node) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := n.plugin.hook("NodeGetVolumeStats"); err != nil {
		return nil, err
	}
	path := req.GetVolumePath()
	if req.GetVolumeId() == "" || path == "" {
		return nil, status.Error(codes.InvalidArgument, "volume ID and volume path are required")
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, status.Errorf(codes.NotFound, "volume path %s: %v", path, err)
		}
		return nil, status.Error(codes.Internal, err.Error())
	}
	used, inodesUsed, err := diskUsage(path)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	size := int64(st.Bsize)
	resp := &csi.NodeGetVolumeStatsResponse{
		Usage: []*csi.VolumeUsage{
			{Unit: csi.VolumeUsage_BYTES, Total: int64(st.Blocks) * size, Available: int64(st.Bavail) * size, Used: used},
			{Unit: csi.VolumeUsage_INODES, Total: int64(st.Files), Available: int64(st.Ffree), Used: inodesUsed},
		},
	}
	abnormal, message := false, "published"
	if mounted, err := isMountPoint(path); err != nil || !mounted {
		abnormal, message = true, "the volume is not mounted at "+path
	}
	resp.ProtoReflect().SetUnknown(volumeCondition(abnormal, message))
	return resp, nil
}

// volumeConditionRPC is the VOLUME_CONDITION node capability, and
// volumeConditionField NodeGetVolumeStatsResponse's volume_condition
// (VolumeCondition{bool abnormal = 1; string message = 2}): CSI 1.3 to
// 1.12, which the kubelet and nodelet speak; the spec module this plugin
// builds with (1.13) has them no more, so they are written by number.
const (
	volumeConditionRPC   csi.NodeServiceCapability_RPC_Type = 4
	volumeConditionField protowire.Number                   = 2
)

// volumeCondition is the volume_condition field, encoded.
func volumeCondition(abnormal bool, message string) []byte {
	var condition []byte
	condition = protowire.AppendTag(condition, 1, protowire.VarintType)
	condition = protowire.AppendVarint(condition, protowire.EncodeBool(abnormal))
	condition = protowire.AppendTag(condition, 2, protowire.BytesType)
	condition = protowire.AppendString(condition, message)
	field := protowire.AppendTag(nil, volumeConditionField, protowire.BytesType)
	return protowire.AppendBytes(field, condition)
}

// diskUsage counts the blocks and inodes of the files under dir, as du.
func diskUsage(dir string) (bytes, inodes int64, err error) {
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			bytes += st.Blocks * 512
		}
		inodes++
		return nil
	})
	return bytes, inodes, err
}
