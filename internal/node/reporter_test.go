package node

// The node status, patch and lease functions and the machine-fact parsers
// are tested as pure functions. TestNodeLoopsAgainstAPIServer runs both
// runnables in a manager against a real API server (envtest, see
// envtest_test.go) with the CRI fake from k8s.io/cri-api/pkg/apis/testing,
// stand-in CNI plugins and real files in t.TempDir().

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

var nodeQuantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

var nodeT0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func nodeTestFacts() nodeFacts {
	return nodeFacts{
		machine: MachineInfo{
			MilliCPUs:             2000,
			MemoryBytes:           4 << 30,
			EphemeralStorageBytes: 100 << 30,
			KernelVersion:         "6.1.0-18-amd64",
			OSImage:               "Debian GNU/Linux 12 (bookworm)",
			OperatingSystem:       "linux",
			Architecture:          "amd64",
			MachineID:             "machine-id",
			SystemUUID:            "system-uuid",
			BootID:                "boot-id",
		},
		addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
			{Type: corev1.NodeHostName, Address: "node-a"},
		},
		nodeletVersion: "v0.1.0",
		port:           10250,
		maxPods:        110,
	}
}

func readyRuntimeState(observed time.Time) nodeRuntimeState {
	return nodeRuntimeState{
		version: &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "1.6.20"},
		status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		}},
		observed: observed,
	}
}

// readyNodeStatus is the status of a ready node written at heartbeat, Ready
// since transition, spelled out in full.
func readyNodeStatus(heartbeat, transition time.Time) corev1.NodeStatus {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("2"),
		corev1.ResourceMemory:           resource.MustParse("4Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	condition := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{
			Type: t, Status: status, Reason: reason, Message: message,
			LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(transition),
		}
	}
	return corev1.NodeStatus{
		Capacity:    resources,
		Allocatable: resources.DeepCopy(),
		Conditions: []corev1.NodeCondition{
			condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
			condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
			condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
			{Type: corev1.NodeHostName, Address: "node-a"},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID:               "machine-id",
			SystemUUID:              "system-uuid",
			BootID:                  "boot-id",
			KernelVersion:           "6.1.0-18-amd64",
			OSImage:                 "Debian GNU/Linux 12 (bookworm)",
			ContainerRuntimeVersion: "containerd://1.6.20",
			KubeletVersion:          "v0.1.0",
			OperatingSystem:         "linux",
			Architecture:            "amd64",
		},
	}
}

func TestNodeStatus(t *testing.T) {
	now := nodeT0.Add(10 * time.Second)
	tests := map[string]struct {
		// node mutates a Node the API server holds, written ready at nodeT0.
		node    func(*corev1.Node)
		runtime nodeRuntimeState
		now     time.Time
		// want mutates readyNodeStatus(now, nodeT0).
		want      func(*corev1.NodeStatus)
		wantPatch bool
	}{
		"first registration reports everything, every condition starting now": {
			node:    func(n *corev1.Node) { n.Status = corev1.NodeStatus{} },
			runtime: readyRuntimeState(now),
			now:     now,
			want: func(s *corev1.NodeStatus) {
				for i := range s.Conditions {
					s.Conditions[i].LastTransitionTime = metav1.NewTime(now)
				}
			},
			wantPatch: true,
		},
		"nothing changed but the heartbeat: no patch": {
			runtime: readyRuntimeState(now),
			now:     now,
		},
		"Ready=Unknown set by the node lifecycle controller is patched back to True": {
			node: func(n *corev1.Node) {
				ready := findNodeCondition(&n.Status, corev1.NodeReady)
				ready.Status = corev1.ConditionUnknown
				ready.Reason = "NodeStatusUnknown"
				ready.Message = "Kubelet stopped posting node status."
				ready.LastTransitionTime = metav1.NewTime(nodeT0.Add(5 * time.Second))
			},
			runtime: readyRuntimeState(now),
			now:     now,
			want: func(s *corev1.NodeStatus) {
				findNodeCondition(s, corev1.NodeReady).LastTransitionTime = metav1.NewTime(now)
			},
			wantPatch: true,
		},
		"a runtime that never answered is down": {
			runtime: nodeRuntimeState{},
			now:     now,
			want: func(s *corev1.NodeStatus) {
				*findNodeCondition(s, corev1.NodeReady) = corev1.NodeCondition{
					Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime is down",
					LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now),
				}
			},
			wantPatch: true,
		},
		"a runtime status older than 30s is down": {
			runtime: readyRuntimeState(now.Add(-31 * time.Second)),
			now:     now,
			want: func(s *corev1.NodeStatus) {
				ready := findNodeCondition(s, corev1.NodeReady)
				ready.Status, ready.Reason, ready.Message = corev1.ConditionFalse, "KubeletNotReady", "container runtime is down"
				ready.LastTransitionTime = metav1.NewTime(now)
			},
			wantPatch: true,
		},
		"a runtime status 20s old, the reads since failing, still counts": {
			runtime: readyRuntimeState(now.Add(-20 * time.Second)),
			now:     now,
		},
		"a network not ready is NotReady with the runtime's reason and message": {
			runtime: func() nodeRuntimeState {
				rt := readyRuntimeState(now)
				rt.status.Conditions[1] = &runtimeapi.RuntimeCondition{
					Type: runtimeapi.NetworkReady, Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized",
				}
				return rt
			}(),
			now: now,
			want: func(s *corev1.NodeStatus) {
				ready := findNodeCondition(s, corev1.NodeReady)
				ready.Status, ready.Reason = corev1.ConditionFalse, "KubeletNotReady"
				ready.Message = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
				ready.LastTransitionTime = metav1.NewTime(now)
			},
			wantPatch: true,
		},
		"nodelet's own network not ready (agent mode) is NotReady with its reason": {
			runtime: func() nodeRuntimeState {
				rt := readyRuntimeState(now)
				rt.networkError = errors.New("no CNI configuration file in /var/lib/nodelet/cni/net.d")
				return rt
			}(),
			now: now,
			want: func(s *corev1.NodeStatus) {
				ready := findNodeCondition(s, corev1.NodeReady)
				ready.Status, ready.Reason = corev1.ConditionFalse, "KubeletNotReady"
				ready.Message = "nodelet network not ready: no CNI configuration file in /var/lib/nodelet/cni/net.d"
				ready.LastTransitionTime = metav1.NewTime(now)
			},
			wantPatch: true,
		},
		"runtime and network not ready are both told, a missing condition as not ready": {
			runtime: nodeRuntimeState{
				version:  readyRuntimeState(now).version,
				status:   &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{{Type: runtimeapi.RuntimeReady, Reason: "Starting", Message: "still starting"}}},
				observed: now,
			},
			now: now,
			want: func(s *corev1.NodeStatus) {
				ready := findNodeCondition(s, corev1.NodeReady)
				ready.Status, ready.Reason = corev1.ConditionFalse, "KubeletNotReady"
				ready.Message = "[container runtime not ready: RuntimeReady=false reason:Starting message:still starting, " +
					"container runtime network not ready: NetworkReady=false reason:ConditionNotReported message:]"
				ready.LastTransitionTime = metav1.NewTime(now)
			},
			wantPatch: true,
		},
		"a change elsewhere keeps each condition's transition time": {
			runtime: func() nodeRuntimeState {
				rt := readyRuntimeState(now)
				rt.version.RuntimeVersion = "1.7.0"
				return rt
			}(),
			now:       now,
			want:      func(s *corev1.NodeStatus) { s.NodeInfo.ContainerRuntimeVersion = "containerd://1.7.0" },
			wantPatch: true,
		},
		"an unknown runtime version keeps the one reported": {
			runtime: func() nodeRuntimeState {
				rt := readyRuntimeState(now)
				rt.version = nil
				return rt
			}(),
			now: now,
		},
		"five minutes after the last write, the status is written again": {
			runtime:   readyRuntimeState(nodeT0.Add(5 * time.Minute)),
			now:       nodeT0.Add(5 * time.Minute),
			wantPatch: true,
		},
		"a little less than five minutes after the last write, it is not": {
			runtime: readyRuntimeState(nodeT0.Add(5*time.Minute - time.Second)),
			now:     nodeT0.Add(5*time.Minute - time.Second),
		},
		"what others report (extended resources, other conditions, images) is kept": {
			node: func(n *corev1.Node) {
				n.Status.Capacity["example.com/dongle"] = resource.MustParse("4")
				n.Status.Allocatable["example.com/dongle"] = resource.MustParse("3")
				n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
					Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated",
					LastHeartbeatTime: metav1.NewTime(nodeT0), LastTransitionTime: metav1.NewTime(nodeT0),
				})
				n.Status.Images = []corev1.ContainerImage{{Names: []string{"busybox"}, SizeBytes: 1}}
			},
			runtime: readyRuntimeState(now),
			now:     now,
			want: func(s *corev1.NodeStatus) {
				s.Capacity["example.com/dongle"] = resource.MustParse("4")
				s.Allocatable["example.com/dongle"] = resource.MustParse("3")
				s.Conditions = append(s.Conditions, corev1.NodeCondition{
					Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated",
					LastHeartbeatTime: metav1.NewTime(nodeT0), LastTransitionTime: metav1.NewTime(nodeT0),
				})
				s.Images = []corev1.ContainerImage{{Names: []string{"busybox"}, SizeBytes: 1}}
			},
		},
		"an address that changed is patched": {
			node: func(n *corev1.Node) {
				n.Status.Addresses[0].Address = "10.0.0.8"
			},
			runtime:   readyRuntimeState(now),
			now:       now,
			wantPatch: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: readyNodeStatus(nodeT0, nodeT0)}
			if tc.node != nil {
				tc.node(node)
			}
			before := node.DeepCopy()
			want := readyNodeStatus(tc.now, nodeT0)
			if tc.want != nil {
				tc.want(&want)
			}

			got, patch := nodeStatus(node, nodeTestFacts(), tc.runtime, tc.now, 5*time.Minute)
			if diff := cmp.Diff(want, got, nodeQuantityEqual); diff != "" {
				t.Errorf("nodeStatus() status mismatch (-want +got):\n%s", diff)
			}
			if patch != tc.wantPatch {
				t.Errorf("nodeStatus() patch = %v, want %v", patch, tc.wantPatch)
			}
			if diff := cmp.Diff(before, node, nodeQuantityEqual); diff != "" {
				t.Errorf("nodeStatus() changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestNewNode(t *testing.T) {
	got := newNode("node-a", "host-a", nodeTestFacts(), readyRuntimeState(nodeT0), nodeT0)
	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "node-a", Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
			Labels: map[string]string{
				"kubernetes.io/hostname": "host-a",
				"kubernetes.io/os":       goruntime.GOOS,
				"kubernetes.io/arch":     goruntime.GOARCH,
				"nodelet.dev/agent":      "nodelet",
			},
		},
		Status: readyNodeStatus(nodeT0, nodeT0),
	}
	if diff := cmp.Diff(want, got, nodeQuantityEqual); diff != "" {
		t.Errorf("newNode() mismatch (-want +got):\n%s", diff)
	}
}

func TestRenewedLease(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "node-uid"}
	tests := map[string]struct {
		lease   *coordinationv1.Lease
		nodeUID types.UID
		want    *coordinationv1.Lease
	}{
		"a new lease is held by the node and owned by it": {
			lease:   &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-a"}},
			nodeUID: "node-uid",
			want: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-a", OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(nodeT0)),
				},
			},
		},
		"before the Node is registered, the lease has no owner": {
			lease: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-a"}},
			want: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-a"},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(nodeT0)),
				},
			},
		},
		"a renewal moves renewTime and takes the lease back, keeping its owner": {
			lease: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-a", ResourceVersion: "7", OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To("someone-else"), LeaseDurationSeconds: ptr.To[int32](15), RenewTime: ptr.To(metav1.NewMicroTime(nodeT0.Add(-time.Minute))),
				},
			},
			nodeUID: "another-uid",
			want: &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "node-a", ResourceVersion: "7", OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: ptr.To("node-a"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: ptr.To(metav1.NewMicroTime(nodeT0)),
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			before := tc.lease.DeepCopy()
			got := renewedLease(tc.lease, "node-a", tc.nodeUID, 40, nodeT0)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("renewedLease() mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.lease); diff != "" {
				t.Errorf("renewedLease() changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestNodeLoopsAgainstAPIServer(t *testing.T) {
	cfg := testenv.StartAPIServer(t)
	const nodeName = "node-under-test"

	fakeRuntime := critest.NewFakeRuntimeService()
	fakeImages := critest.NewFakeImageService()
	fakeImages.SetFakeImageSize(1234)
	fakeImages.SetFakeImages([]string{"registry.test/busybox:1.35"})
	fakeRuntime.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}

	mgr, err := manager.New(cfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(100)
	reporter, err := NewNodeStatusReporter(mgr.GetClient(), mgr.GetAPIReader(), fakeRuntime, NodeStatusOptions{
		NodeName:        nodeName,
		NodeIPs:         []string{"127.0.0.1"},
		NodeletVersion:  "v0.1.0-test",
		RootDir:         t.TempDir(),
		UpdateFrequency: 200 * time.Millisecond,
		Machine: func() (MachineInfo, error) {
			return MachineInfo{MilliCPUs: 2000, MemoryBytes: 4 << 30, EphemeralStorageBytes: 100 << 30}, nil
		},
		Allocatable: AllocatableConfig{SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
		Images:      fakeImages,
		Recorder:    recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	renewer, err := NewLeaseRenewer(mgr.GetClient(), mgr.GetAPIReader(), LeaseOptions{
		NodeName:      nodeName,
		RenewInterval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []manager.Runnable{reporter, renewer} {
		if err := mgr.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testenv.RunManager(t, mgr)

	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	readyIs := func(want corev1.ConditionStatus) func(context.Context) error {
		return func(context.Context) error {
			node := &corev1.Node{}
			if err := admin.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
				return err
			}
			ready := findNodeCondition(&node.Status, corev1.NodeReady)
			if ready == nil || ready.Status != want {
				return errors.New("Ready is " + string(ptr.Deref(ready, corev1.NodeCondition{}).Status))
			}
			return nil
		}
	}

	t.Run("registers the node, ready, with its addresses and runtime", func(t *testing.T) {
		await.Eventually(t, 30*time.Second, "node Ready=True", readyIs(corev1.ConditionTrue))
		node := &corev1.Node{}
		if err := admin.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			t.Fatal(err)
		}
		wantAddresses := []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: nodeName},
		}
		if diff := cmp.Diff(wantAddresses, node.Status.Addresses); diff != "" {
			t.Errorf("addresses mismatch (-want +got):\n%s", diff)
		}
		if got, want := node.Status.NodeInfo.ContainerRuntimeVersion, critest.FakeRuntimeName+"://"+critest.FakeVersion; got != want {
			t.Errorf("containerRuntimeVersion = %q, want %q", got, want)
		}
		if got := node.Status.NodeInfo.KubeletVersion; got != "v0.1.0-test" {
			t.Errorf("kubeletVersion = %q, want v0.1.0-test", got)
		}
		if got := node.Labels[corev1.LabelHostname]; got != nodeName {
			t.Errorf("hostname label = %q, want %q", got, nodeName)
		}
		if pods := node.Status.Allocatable[corev1.ResourcePods]; pods.Value() != 110 {
			t.Errorf("allocatable pods = %s, want 110", pods.String())
		}
		if cpu := node.Status.Allocatable[corev1.ResourceCPU]; cpu.MilliValue() != 1500 {
			t.Errorf("allocatable cpu = %s, want 1500m: 2 CPUs less 500m system-reserved", cpu.String())
		}
		wantImages := []corev1.ContainerImage{{Names: []string{"registry.test/busybox:1.35"}, SizeBytes: 1234}}
		if diff := cmp.Diff(wantImages, node.Status.Images); diff != "" {
			t.Errorf("images mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"127.0.0.1"}, reporter.NodeIPs()); diff != "" {
			t.Errorf("NodeIPs() mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("keeps the lease renewed, owned by the node", func(t *testing.T) {
		node := &corev1.Node{}
		if err := admin.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			t.Fatal(err)
		}
		key := client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: nodeName}
		var first time.Time
		await.Eventually(t, 30*time.Second, "lease with an owner", func(context.Context) error {
			lease := &coordinationv1.Lease{}
			if err := admin.Get(ctx, key, lease); err != nil {
				return err
			}
			if len(lease.OwnerReferences) == 0 {
				return errors.New("no owner reference yet")
			}
			want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: node.UID}}
			if diff := cmp.Diff(want, lease.OwnerReferences); diff != "" {
				t.Fatalf("owner references mismatch (-want +got):\n%s", diff)
			}
			if got := ptr.Deref(lease.Spec.HolderIdentity, ""); got != nodeName {
				t.Fatalf("holderIdentity = %q, want %q", got, nodeName)
			}
			if got := ptr.Deref(lease.Spec.LeaseDurationSeconds, 0); got != 40 {
				t.Fatalf("leaseDurationSeconds = %d, want 40", got)
			}
			first = lease.Spec.RenewTime.Time
			return nil
		})
		await.Eventually(t, 10*time.Second, "renewTime advancing", func(context.Context) error {
			lease := &coordinationv1.Lease{}
			if err := admin.Get(ctx, key, lease); err != nil {
				return err
			}
			if !lease.Spec.RenewTime.After(first) {
				return errors.New("renewTime still " + lease.Spec.RenewTime.String())
			}
			return nil
		})

		// Someone else writing the Lease makes nodelet's next update
		// conflict; it reads the Lease again and takes it back.
		lease := &coordinationv1.Lease{}
		if err := admin.Get(ctx, key, lease); err != nil {
			t.Fatal(err)
		}
		lease.Spec.HolderIdentity = ptr.To("someone-else")
		if err := admin.Update(ctx, lease); err != nil {
			t.Fatal(err)
		}
		await.Eventually(t, 10*time.Second, "lease taken back", func(context.Context) error {
			lease := &coordinationv1.Lease{}
			if err := admin.Get(ctx, key, lease); err != nil {
				return err
			}
			if got := ptr.Deref(lease.Spec.HolderIdentity, ""); got != nodeName {
				return errors.New("holder is " + got)
			}
			return nil
		})
	})

	t.Run("sets Ready back to True after someone set it Unknown", func(t *testing.T) {
		// What registering recorded.
		for drained := false; !drained; {
			select {
			case <-recorder.Events:
			default:
				drained = true
			}
		}
		node := &corev1.Node{}
		if err := admin.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
			t.Fatal(err)
		}
		ready := findNodeCondition(&node.Status, corev1.NodeReady)
		ready.Status, ready.Reason, ready.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
		if err := admin.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
		await.Eventually(t, 10*time.Second, "node Ready=True again", readyIs(corev1.ConditionTrue))
		// Once, with the kubelet's message.
		want := "Normal NodeReady Node " + nodeName + " status is now: NodeReady"
		select {
		case event := <-recorder.Events:
			if event != want {
				t.Errorf("event %q, want %q", event, want)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("no event; want %q", want)
		}
	})
}
