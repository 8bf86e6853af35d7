package csi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// What the node tells the cluster about its CSI drivers, as the kubelet's
// nodeinfomanager: the Node's csi.volume.kubernetes.io/nodeid annotation
// (a JSON map of driver name to node ID) and topology labels, and the
// CSINode object of the node's name (owned by the Node) listing each
// driver's node ID, topology keys and volume limit. The decisions are
// pure functions over the objects; NodeInfo reads and writes them.

// AnnotationNodeID is the Node annotation mapping each CSI driver to the
// node's ID in it.
const AnnotationNodeID = "csi.volume.kubernetes.io/nodeid"

// NodeInfo writes the node's CSI drivers into its Node and CSINode.
type NodeInfo struct {
	Client   kubernetes.Interface
	NodeName string
}

// Install writes the driver, as its NodeGetInfo answered, into the Node
// and the CSINode.
func (n *NodeInfo) Install(ctx context.Context, driver string, info *csipb.NodeGetInfoResponse) error {
	topology := info.GetAccessibleTopology().GetSegments()
	node, err := n.updateNode(ctx, func(node *corev1.Node) (bool, error) {
		annotation, changed, err := withNodeID(node.Annotations[AnnotationNodeID], driver, info.GetNodeId())
		if err != nil {
			return false, err
		}
		labels, labelsChanged, err := withTopologyLabels(node.Labels, topology)
		if err != nil {
			return false, err
		}
		if changed {
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			node.Annotations[AnnotationNodeID] = annotation
		}
		node.Labels = labels
		return changed || labelsChanged, nil
	})
	if err != nil {
		return fmt.Errorf("updating node %s for CSI driver %q: %w", n.NodeName, driver, err)
	}
	want := csiNodeDriver(driver, info)
	err = n.updateCSINode(ctx, node, func(drivers []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		return withDriver(drivers, want)
	})
	if err != nil {
		return fmt.Errorf("updating CSINode %s for CSI driver %q: %w", n.NodeName, driver, err)
	}
	return nil
}

// Uninstall removes the driver from the Node's annotation and the
// CSINode. Its topology labels stay, as the kubelet leaves them.
func (n *NodeInfo) Uninstall(ctx context.Context, driver string) error {
	_, err := n.updateNode(ctx, func(node *corev1.Node) (bool, error) {
		annotation, changed, err := withoutNodeID(node.Annotations[AnnotationNodeID], driver)
		if err != nil || !changed {
			return false, err
		}
		if annotation == "" {
			delete(node.Annotations, AnnotationNodeID)
		} else {
			node.Annotations[AnnotationNodeID] = annotation
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("updating node %s for CSI driver %q: %w", n.NodeName, driver, err)
	}
	err = n.updateCSINode(ctx, nil, func(drivers []storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
		return withoutDriver(drivers, driver)
	})
	if err != nil {
		return fmt.Errorf("updating CSINode %s for CSI driver %q: %w", n.NodeName, driver, err)
	}
	return nil
}

// updateCSINode applies change to the node's CSINode's drivers and writes
// them when they changed, again on a conflict. A missing CSINode is
// created for node, or left missing when node is nil (nothing to remove).
func (n *NodeInfo) updateCSINode(ctx context.Context, node *corev1.Node, change func([]storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		csiNode, err := n.Client.StorageV1().CSINodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if node == nil {
				return nil
			}
			csiNode, err = n.Client.StorageV1().CSINodes().Create(ctx, newCSINode(node), metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		drivers, changed := change(csiNode.Spec.Drivers)
		if !changed {
			return nil
		}
		csiNode.Spec.Drivers = drivers
		_, err = n.Client.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
		return err
	})
}

// updateNode applies change to the Node and writes it when it changed,
// again on a conflict. It returns the Node as last read.
func (n *NodeInfo) updateNode(ctx context.Context, change func(*corev1.Node) (bool, error)) (*corev1.Node, error) {
	var node *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var err error
		node, err = n.Client.CoreV1().Nodes().Get(ctx, n.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed, err := change(node)
		if err != nil || !changed {
			return err
		}
		node, err = n.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	return node, err
}

// newCSINode is the node's CSINode, owned by its Node so that it goes
// with it.
func newCSINode(node *corev1.Node) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: node.Name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1",
				Kind:       "Node",
				Name:       node.Name,
				UID:        node.UID,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
}

// csiNodeDriver is the CSINode entry of a driver: its node ID, its
// topology keys sorted, and its volume limit when it gave one (capped to
// an int32, as the kubelet caps it).
func csiNodeDriver(name string, info *csipb.NodeGetInfoResponse) storagev1.CSINodeDriver {
	driver := storagev1.CSINodeDriver{
		Name:         name,
		NodeID:       info.GetNodeId(),
		TopologyKeys: slices.Sorted(maps.Keys(info.GetAccessibleTopology().GetSegments())),
	}
	if limit := info.GetMaxVolumesPerNode(); limit > 0 {
		count := int32(min(limit, math.MaxInt32))
		driver.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	return driver
}

// withDriver puts want in place of the entry of its name, keeping the
// others; changed is false when that entry already says the same.
func withDriver(drivers []storagev1.CSINodeDriver, want storagev1.CSINodeDriver) ([]storagev1.CSINodeDriver, bool) {
	out := make([]storagev1.CSINodeDriver, 0, len(drivers)+1)
	changed := true
	for _, d := range drivers {
		if d.Name != want.Name {
			out = append(out, d)
			continue
		}
		if d.NodeID == want.NodeID && sameKeys(d.TopologyKeys, want.TopologyKeys) && sameCount(d.Allocatable, want.Allocatable) {
			changed = false
		}
	}
	if !changed {
		return drivers, false
	}
	return append(out, want), true
}

// withoutDriver drops the driver's entry.
func withoutDriver(drivers []storagev1.CSINodeDriver, name string) ([]storagev1.CSINodeDriver, bool) {
	out := make([]storagev1.CSINodeDriver, 0, len(drivers))
	for _, d := range drivers {
		if d.Name != name {
			out = append(out, d)
		}
	}
	return out, len(out) != len(drivers)
}

func sameKeys(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func sameCount(a, b *storagev1.VolumeNodeResources) bool {
	count := func(r *storagev1.VolumeNodeResources) int32 {
		if r == nil || r.Count == nil {
			return 0
		}
		return *r.Count
	}
	return count(a) == count(b)
}

// withNodeID sets the driver's node ID in the annotation's JSON map.
func withNodeID(annotation, driver, nodeID string) (string, bool, error) {
	ids, err := parseNodeIDs(annotation)
	if err != nil {
		return "", false, err
	}
	if current, ok := ids[driver]; ok && current == nodeID {
		return annotation, false, nil
	}
	ids[driver] = nodeID
	data, err := json.Marshal(ids)
	return string(data), err == nil, err
}

// withoutNodeID drops the driver from the annotation's map; the result
// is empty when no driver is left (the annotation is then removed).
func withoutNodeID(annotation, driver string) (string, bool, error) {
	ids, err := parseNodeIDs(annotation)
	if err != nil {
		return "", false, err
	}
	if _, ok := ids[driver]; !ok {
		return annotation, false, nil
	}
	delete(ids, driver)
	if len(ids) == 0 {
		return "", true, nil
	}
	data, err := json.Marshal(ids)
	return string(data), err == nil, err
}

func parseNodeIDs(annotation string) (map[string]string, error) {
	ids := map[string]string{}
	if annotation == "" {
		return ids, nil
	}
	if err := json.Unmarshal([]byte(annotation), &ids); err != nil {
		return nil, fmt.Errorf("failed to parse node annotation %q=%q: %w", AnnotationNodeID, annotation, err)
	}
	return ids, nil
}

// withTopologyLabels adds the driver's topology to the Node's labels; a
// label the node has with another value is the kubelet's collision
// error, and nothing is changed.
func withTopologyLabels(labels, topology map[string]string) (map[string]string, bool, error) {
	changed := false
	for k, v := range topology {
		current, ok := labels[k]
		if ok && current != v {
			return labels, false, fmt.Errorf("detected topology value collision: driver reported %q:%q but existing label is %q:%q", k, v, k, current)
		}
		changed = changed || !ok
	}
	if !changed {
		return labels, false, nil
	}
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, topology)
	return out, true, nil
}
