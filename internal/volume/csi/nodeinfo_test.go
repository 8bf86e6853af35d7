package csi

import (
	"context"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// Unit tests of the node's CSI information: the pure updates, and
// NodeInfo against client-go's fake clientset.

func TestWithDriver(t *testing.T) {
	other := storagev1.CSINodeDriver{Name: "other", NodeID: "o"}
	want := storagev1.CSINodeDriver{Name: "mock", NodeID: "n1", TopologyKeys: []string{"a", "b"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](4)}}
	tests := map[string]struct {
		drivers     []storagev1.CSINodeDriver
		wantDrivers []storagev1.CSINodeDriver
		wantChanged bool
	}{
		"a new driver is added after the others": {
			drivers: []storagev1.CSINodeDriver{other}, wantDrivers: []storagev1.CSINodeDriver{other, want}, wantChanged: true,
		},
		"the same driver, keys in another order, is left as it is": {
			drivers:     []storagev1.CSINodeDriver{{Name: "mock", NodeID: "n1", TopologyKeys: []string{"b", "a"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](4)}}},
			wantDrivers: []storagev1.CSINodeDriver{{Name: "mock", NodeID: "n1", TopologyKeys: []string{"b", "a"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](4)}}},
		},
		"a new node ID replaces the entry": {
			drivers: []storagev1.CSINodeDriver{{Name: "mock", NodeID: "old"}, other}, wantDrivers: []storagev1.CSINodeDriver{other, want}, wantChanged: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, changed := withDriver(tc.drivers, want)
			if changed != tc.wantChanged {
				t.Errorf("changed = %t, want %t", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.wantDrivers, got); diff != "" {
				t.Errorf("drivers (-want +got):\n%s", diff)
			}
		})
	}
	if got, changed := withoutDriver([]storagev1.CSINodeDriver{other, want}, "mock"); !changed || !cmp.Equal(got, []storagev1.CSINodeDriver{other}) {
		t.Errorf("withoutDriver = %v, %t", got, changed)
	}
}

func TestNodeIDAnnotation(t *testing.T) {
	got, changed, err := withNodeID(`{"other":"o"}`, "mock", "n1")
	if err != nil || !changed || got != `{"mock":"n1","other":"o"}` {
		t.Errorf("withNodeID = %s, %t, %v", got, changed, err)
	}
	if _, changed, _ := withNodeID(got, "mock", "n1"); changed {
		t.Error("the same node ID changed the annotation")
	}
	if _, _, err := withNodeID("not json", "mock", "n1"); err == nil {
		t.Error("a broken annotation was overwritten")
	}
	got, changed, err = withoutNodeID(`{"mock":"n1","other":"o"}`, "mock")
	if err != nil || !changed || got != `{"other":"o"}` {
		t.Errorf("withoutNodeID = %s, %t, %v", got, changed, err)
	}
	if got, changed, _ := withoutNodeID(`{"mock":"n1"}`, "mock"); !changed || got != "" {
		t.Errorf("the last driver removed leaves %q, %t; want no annotation", got, changed)
	}
}

func TestTopologyLabels(t *testing.T) {
	labels := map[string]string{"zone": "a"}
	got, changed, err := withTopologyLabels(labels, map[string]string{"topology.mock/node": "n1", "zone": "a"})
	if err != nil || !changed || !cmp.Equal(got, map[string]string{"zone": "a", "topology.mock/node": "n1"}) {
		t.Errorf("withTopologyLabels = %v, %t, %v", got, changed, err)
	}
	if len(labels) != 1 {
		t.Error("the Node's labels were changed in place")
	}
	want := `detected topology value collision: driver reported "zone":"b" but existing label is "zone":"a"`
	if _, _, err := withTopologyLabels(labels, map[string]string{"zone": "b"}); err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestNodeInfoInstallsAndUninstallsADriver(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", UID: "node-uid"}}
	client := fake.NewClientset(node)
	n := &NodeInfo{Client: client, NodeName: "node-1"}
	ctx := context.Background()
	info := &csipb.NodeGetInfoResponse{
		NodeId: "mock-node-1", MaxVolumesPerNode: 8,
		AccessibleTopology: &csipb.Topology{Segments: map[string]string{"topology.mock/node": "mock-node-1"}},
	}
	if err := n.Install(ctx, "mock", info); err != nil {
		t.Fatal(err)
	}
	gotNode, _ := client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if got := gotNode.Annotations[AnnotationNodeID]; got != `{"mock":"mock-node-1"}` {
		t.Errorf("annotation = %s", got)
	}
	if got := gotNode.Labels["topology.mock/node"]; got != "mock-node-1" {
		t.Errorf("topology label = %q", got)
	}
	csiNode, err := client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []storagev1.CSINodeDriver{{Name: "mock", NodeID: "mock-node-1", TopologyKeys: []string{"topology.mock/node"}, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](8)}}}
	if diff := cmp.Diff(want, csiNode.Spec.Drivers); diff != "" {
		t.Errorf("CSINode drivers (-want +got):\n%s", diff)
	}
	if owners := csiNode.OwnerReferences; len(owners) != 1 || owners[0].Kind != "Node" || owners[0].UID != "node-uid" {
		t.Errorf("CSINode owners = %v, want the Node", owners)
	}

	if err := n.Uninstall(ctx, "mock"); err != nil {
		t.Fatal(err)
	}
	gotNode, _ = client.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if _, ok := gotNode.Annotations[AnnotationNodeID]; ok {
		t.Error("annotation left")
	}
	csiNode, _ = client.StorageV1().CSINodes().Get(ctx, "node-1", metav1.GetOptions{})
	if len(csiNode.Spec.Drivers) != 0 {
		t.Errorf("CSINode drivers left: %v", csiNode.Spec.Drivers)
	}
}
