package volume

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Unit tests of CSI volumes: the pure decisions, and the calls the
// Manager makes to an in-process fake node service (fakeCSINode, which
// records them) with the API objects in client-go's fake clientset.

func TestCSINames(t *testing.T) {
	if got, want := csiStagingPath("/var/lib/nodelet", "mock.csi", "vol-1"),
		"/var/lib/nodelet/plugins/kubernetes.io/csi/mock.csi/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount"; got != want {
		t.Errorf("staging path = %s, want %s", got, want)
	}
	if got, want := csiUniqueName("mock.csi", "vol-1"), corev1.UniqueVolumeName("kubernetes.io/csi/mock.csi^vol-1"); got != want {
		t.Errorf("unique name = %s, want %s", got, want)
	}
	// sha256("vol-1" + "mock.csi" + "node-1"), as the attach/detach
	// controller names the VolumeAttachment.
	if got := csiAttachmentName("vol-1", "mock.csi", "node-1"); !strings.HasPrefix(got, "csi-") || len(got) != 4+64 {
		t.Errorf("attachment name = %s, want csi-<sha256>", got)
	}
	if csiAttachmentName("vol-1", "mock.csi", "node-1") == csiAttachmentName("vol-1", "mock.csi", "node-2") {
		t.Error("two nodes share an attachment name")
	}
	if got := csiEphemeralHandle("uid-1", "scratch"); got == csiEphemeralHandle("uid-2", "scratch") || !strings.HasPrefix(got, "csi-") {
		t.Errorf("ephemeral handle %s is not per pod", got)
	}
}

func csiDriverObject(mutate func(*storagev1.CSIDriverSpec)) *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "mock.csi"}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	if mutate != nil {
		mutate(&d.Spec)
	}
	return d
}

func csiPV(mutate func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:    &corev1.ObjectReference{Namespace: "shop", Name: "data", UID: "claim-uid"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "mock.csi", VolumeHandle: "vol-1", VolumeAttributes: map[string]string{"size": "1Gi"},
			}},
		},
	}
	if mutate != nil {
		mutate(pv)
	}
	return pv
}

func TestCSIPersistentMount(t *testing.T) {
	withFSGroup := func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)} }
	tests := map[string]struct {
		pod      func(*corev1.Pod)
		pv       func(*corev1.PersistentVolume)
		driver   *storagev1.CSIDriver
		readOnly bool
		check    func(t *testing.T, m csiMount)
		wantErr  string
	}{
		"without a CSIDriver object the volume is attached first, as the kubelet assumes": {
			check: func(t *testing.T, m csiMount) {
				if !m.attach {
					t.Error("not attached")
				}
			},
		},
		"attachRequired false: not attached; the volume's attributes are its context": {
			driver: csiDriverObject(nil),
			check: func(t *testing.T, m csiMount) {
				if m.attach {
					t.Error("attached")
				}
				if diff := cmp.Diff(map[string]string{"size": "1Gi"}, m.context); diff != "" {
					t.Errorf("context (-want +got):\n%s", diff)
				}
			},
		},
		"podInfoOnMount adds the pod's identity to the publish context only": {
			driver: csiDriverObject(func(s *storagev1.CSIDriverSpec) { s.PodInfoOnMount = ptr.To(true) }),
			check: func(t *testing.T, m csiMount) {
				want := map[string]string{
					"size": "1Gi", csiPodName: "web-0", csiPodNamespace: "shop", csiPodUID: string(podUID),
					csiServiceAccountName: "web", csiEphemeral: "false",
				}
				if diff := cmp.Diff(want, m.context); diff != "" {
					t.Errorf("context (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(map[string]string{"size": "1Gi"}, m.stageContext); diff != "" {
					t.Errorf("stage context (-want +got):\n%s", diff)
				}
			},
		},
		"the claim's readOnly makes the volume read-only, and then it keeps its group": {
			pod: withFSGroup, driver: csiDriverObject(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy) }),
			readOnly: true,
			check: func(t *testing.T, m csiMount) {
				if !m.readOnly || m.fsGroup {
					t.Errorf("readOnly %t fsGroup %t, want true false", m.readOnly, m.fsGroup)
				}
			},
		},
		"a Block volume is asked for as a device: no fsType, mount flags or fsGroup, as the kubelet's block mapper": {
			pod: withFSGroup, driver: csiDriverObject(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy) }),
			pv: func(pv *corev1.PersistentVolume) {
				pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
				pv.Spec.CSI.FSType = "ext4"
				pv.Spec.MountOptions = []string{"noatime"}
				pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
			},
			check: func(t *testing.T, m csiMount) {
				if !m.block || m.fsType != "" || m.mountFlags != nil || m.fsGroup {
					t.Errorf("block %t fsType %q mountFlags %v fsGroup %t, want a device alone", m.block, m.fsType, m.mountFlags, m.fsGroup)
				}
				want := &csipb.VolumeCapability{
					AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}},
					AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
				}
				if diff := cmp.Diff(want, csiCapability(m), protocmp.Transform()); diff != "" {
					t.Errorf("capability (-want +got):\n%s", diff)
				}
			},
		},
		"fsGroupPolicy File gives the fsGroup": {
			pod: withFSGroup, driver: csiDriverObject(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy) }),
			check: func(t *testing.T, m csiMount) {
				if !m.fsGroup {
					t.Error("fsGroup not given")
				}
			},
		},
		"fsGroupPolicy ReadWriteOnceWithFSType without an fsType does not": {
			pod: withFSGroup, driver: csiDriverObject(nil),
			check: func(t *testing.T, m csiMount) {
				if m.fsGroup {
					t.Error("fsGroup given")
				}
			},
		},
		"fsGroupPolicy ReadWriteOnceWithFSType with an fsType and RWO does": {
			pod: withFSGroup, driver: csiDriverObject(nil),
			pv: func(pv *corev1.PersistentVolume) { pv.Spec.CSI.FSType = "ext4" },
			check: func(t *testing.T, m csiMount) {
				if !m.fsGroup {
					t.Error("fsGroup not given")
				}
			},
		},
		"fsGroupPolicy None never does": {
			pod: withFSGroup, driver: csiDriverObject(func(s *storagev1.CSIDriverSpec) { s.FSGroupPolicy = ptr.To(storagev1.NoneFSGroupPolicy) }),
			check: func(t *testing.T, m csiMount) {
				if m.fsGroup {
					t.Error("fsGroup given")
				}
			},
		},
		"a driver only for ephemeral volumes is refused in the kubelet's words": {
			driver: csiDriverObject(func(s *storagev1.CSIDriverSpec) {
				s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
			}),
			wantErr: `volume mode "Persistent" not supported by driver mock.csi (only supports ["Ephemeral"])`,
		},
		"tokenRequests and requiresRepublish are the publish call's": {
			driver: csiDriverObject(func(s *storagev1.CSIDriverSpec) {
				s.TokenRequests = []storagev1.TokenRequest{{Audience: "a"}}
				s.RequiresRepublish = ptr.To(true)
				s.ServiceAccountTokenInSecrets = ptr.To(true)
			}),
			check: func(t *testing.T, m csiMount) {
				if diff := cmp.Diff([]storagev1.TokenRequest{{Audience: "a"}}, m.tokenRequests); diff != "" || !m.republish || !m.tokensInSecrets {
					t.Errorf("tokenRequests %v, republish %t, tokensInSecrets %t, want a's, true, true", m.tokenRequests, m.republish, m.tokensInSecrets)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := makePod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			m, err := csiPersistentMount(pod, csiPV(tc.pv), tc.readOnly, tc.driver)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.driver != "mock.csi" || m.handle != "vol-1" || m.name != "pv-1" {
				t.Errorf("mount names driver %s handle %s name %s", m.driver, m.handle, m.name)
			}
			tc.check(t, m)
		})
	}
}

func TestCSIInlineMountNeedsTheEphemeralMode(t *testing.T) {
	vol := &corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "mock.csi"}}}
	if _, err := csiInlineMount(makePod(), vol, csiDriverObject(nil)); err == nil ||
		err.Error() != `volume mode "Ephemeral" not supported by driver mock.csi (only supports ["Persistent"])` {
		t.Errorf("error = %v, want the kubelet's refusal", err)
	}
	if _, err := csiInlineMount(makePod(), vol, nil); err == nil ||
		err.Error() != `volume mode "Ephemeral" not supported by driver mock.csi (no CSIDriver object)` {
		t.Errorf("error = %v, want the kubelet's refusal", err)
	}
	driver := csiDriverObject(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	})
	m, err := csiInlineMount(makePod(), vol, driver)
	if err != nil {
		t.Fatal(err)
	}
	if !m.ephemeral || m.attach || m.handle != csiEphemeralHandle(podUID, "scratch") {
		t.Errorf("mount %+v: want an ephemeral, unattached volume with the pod's handle", m)
	}
}

func TestNextCSITeardownStep(t *testing.T) {
	const staging = "/root/plugins/kubernetes.io/csi/d/h/globalmount"
	published := csiRecord{StagingPath: staging}
	unpublished := csiRecord{StagingPath: staging, Unpublished: true}
	tests := map[string]struct {
		record csiRecord
		others []csiRecord
		want   csiTeardownStep
	}{
		"a published volume is unpublished first":                         {record: published, want: csiUnpublish},
		"unpublished, the last to hold its staging unstages it":           {record: unpublished, want: csiUnstage},
		"unpublished, while another pod has it published it stays staged": {record: unpublished, others: []csiRecord{published}, want: csiForget},
		"another pod's record half torn down does not hold the staging":   {record: unpublished, others: []csiRecord{unpublished}, want: csiUnstage},
		"another staging does not count":                                  {record: unpublished, others: []csiRecord{{StagingPath: "/other"}}, want: csiUnstage},
		"a volume never staged is only unpublished":                       {record: csiRecord{Unpublished: true}, want: csiForget},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := nextCSITeardownStep(tc.record, tc.others); got != tc.want {
				t.Errorf("step = %d, want %d", got, tc.want)
			}
		})
	}
}

func csiClaimObjects() []apiruntime.Object {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "data", UID: "claim-uid"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	return []apiruntime.Object{claim, csiPV(nil), csiDriverObject(nil)}
}

func csiClaimPod(uid types.UID) *corev1.Pod {
	pod := makePod(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
	}})
	pod.UID = uid
	pod.Spec.Containers = []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	return pod
}

func TestCSIVolumeIsStagedOnceAndUnstagedByItsLastPod(t *testing.T) {
	drivers := &fakeCSIDrivers{node: &fakeCSINode{}, registered: true}
	e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1"}, csiClaimObjects()...)
	first, second := csiClaimPod("uid-1"), csiClaimPod("uid-2")

	paths, _ := setUp(t, e, first)
	if want := filepath.Join(e.root, "pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount"); paths["data"] != want {
		t.Errorf("path = %s, want %s", paths["data"], want)
	}
	setUp(t, e, second)
	want := []string{"NodeStageVolume vol-1", "NodePublishVolume vol-1", "NodeStageVolume vol-1", "NodePublishVolume vol-1"}
	if diff := cmp.Diff(want, drivers.node.takeCalls()); diff != "" {
		t.Errorf("set-up calls (-want +got):\n%s", diff)
	}

	if err := e.m.TearDownPod(context.Background(), first.UID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"NodeUnpublishVolume vol-1"}, drivers.node.takeCalls()); diff != "" {
		t.Errorf("first teardown's calls: the second pod still has the volume (-want +got):\n%s", diff)
	}
	if err := e.m.TearDownPod(context.Background(), second.UID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"NodeUnpublishVolume vol-1", "NodeUnstageVolume vol-1"}, drivers.node.takeCalls()); diff != "" {
		t.Errorf("last teardown's calls (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(e.m.PodDir(second.UID)); !os.IsNotExist(err) {
		t.Errorf("pod folder left: %v", err)
	}
}

func TestCSITeardownAfterARestartBetweenCalls(t *testing.T) {
	tests := map[string]struct {
		// failing is the call that fails, where nodelet "dies", set up
		// or (tornDown) tearing the pod down.
		failing  string
		tornDown bool
		// before is what was called before it died; after is what a new
		// nodelet calls tearing the pod down.
		before, after []string
	}{
		"between NodeStageVolume and NodePublishVolume": {
			failing: "NodePublishVolume vol-1",
			before:  []string{"NodeStageVolume vol-1", "NodePublishVolume vol-1"},
			after:   []string{"NodeUnpublishVolume vol-1", "NodeUnstageVolume vol-1"},
		},
		"between NodeUnpublishVolume and NodeUnstageVolume": {
			failing: "NodeUnstageVolume vol-1", tornDown: true,
			before: []string{"NodeStageVolume vol-1", "NodePublishVolume vol-1", "NodeUnpublishVolume vol-1", "NodeUnstageVolume vol-1"},
			after:  []string{"NodeUnstageVolume vol-1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			node := &fakeCSINode{fail: map[string]bool{tc.failing: true}}
			drivers := &fakeCSIDrivers{node: node, registered: true}
			e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1"}, csiClaimObjects()...)
			pod := csiClaimPod("uid-1")
			_, _, _ = e.m.SetUpPod(context.Background(), pod)
			if tc.tornDown {
				_ = e.m.TearDownPod(context.Background(), pod.UID)
			}
			if diff := cmp.Diff(tc.before, node.takeCalls()); diff != "" {
				t.Errorf("calls before the restart (-want +got):\n%s", diff)
			}

			// A new nodelet, before the driver registers again: the
			// teardown waits for it, the folder kept.
			delete(node.fail, tc.failing)
			drivers.registered = false
			e.restart()
			if err := e.m.TearDownPod(context.Background(), pod.UID); err == nil {
				t.Fatal("teardown without the driver succeeded")
			}
			if _, err := os.Stat(e.m.PodDir(pod.UID)); err != nil {
				t.Fatalf("pod folder gone while its volume is staged: %v", err)
			}
			drivers.registered = true
			if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.after, node.takeCalls()); diff != "" {
				t.Errorf("calls after the restart (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCSIVolumeWaitsForItsAttachment(t *testing.T) {
	drivers := &fakeCSIDrivers{node: &fakeCSINode{}, registered: true}
	objects := csiClaimObjects()
	objects[2] = csiDriverObject(func(s *storagev1.CSIDriverSpec) { s.AttachRequired = ptr.To(true) })
	e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1"}, objects...)
	pod := csiClaimPod("uid-1")
	attachment := csiAttachmentName("vol-1", "mock.csi", "node-1")

	_, _, err := e.m.SetUpPod(context.Background(), pod)
	want := `MountVolume.WaitForAttach failed for volume "pv-1" : volume vol-1 has GET error for volume attachment ` + attachment
	if err == nil || !strings.HasPrefix(err.Error(), want) || !IsUserError(err) {
		t.Fatalf("error = %v, want a user error starting %s", err, want)
	}
	if diff := cmp.Diff([]corev1.UniqueVolumeName{"kubernetes.io/csi/mock.csi^vol-1"}, e.m.VolumesInUse()); diff != "" {
		t.Errorf("volumes in use while waiting (-want +got):\n%s", diff)
	}
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: attachment},
		Status:     storagev1.VolumeAttachmentStatus{Attached: true},
	}
	if _, err := e.client.StorageV1().VolumeAttachments().Create(context.Background(), va, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setUp(t, e, pod)
	if diff := cmp.Diff([]string{"NodeStageVolume vol-1", "NodePublishVolume vol-1"}, drivers.node.takeCalls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	e.restart()
	if diff := cmp.Diff([]corev1.UniqueVolumeName{"kubernetes.io/csi/mock.csi^vol-1"}, e.m.VolumesInUse()); diff != "" {
		t.Errorf("volumes in use after a restart, from the records (-want +got):\n%s", diff)
	}
	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := e.m.VolumesInUse(); len(got) != 0 {
		t.Errorf("volumes in use after teardown: %v", got)
	}
}

func TestCSIInlineVolumeIsPublishedWithoutStaging(t *testing.T) {
	drivers := &fakeCSIDrivers{node: &fakeCSINode{}, registered: true}
	driver := csiDriverObject(func(s *storagev1.CSIDriverSpec) {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	})
	e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1"}, driver)
	pod := makePod(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "mock.csi"}}})
	handle := csiEphemeralHandle(pod.UID, "scratch")

	paths, _ := setUp(t, e, pod)
	if want := filepath.Join(e.root, "pods", string(podUID), "volumes/kubernetes.io~csi/scratch/mount"); paths["scratch"] != want {
		t.Errorf("path = %s, want %s", paths["scratch"], want)
	}
	if err := e.m.TearDownPod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"NodePublishVolume " + handle, "NodeUnpublishVolume " + handle}, drivers.node.takeCalls()); diff != "" {
		t.Errorf("calls: an ephemeral volume is never staged (-want +got):\n%s", diff)
	}
}

// The PersistentVolume's mountOptions are the driver's mount flags, at
// staging and at publishing alike, as the kubelet passes them.
func TestCSIMountOptionsAreTheDriversMountFlags(t *testing.T) {
	node := &fakeCSINode{}
	drivers := &fakeCSIDrivers{node: node, registered: true}
	objects := csiClaimObjects()
	objects[1] = csiPV(func(pv *corev1.PersistentVolume) {
		pv.Spec.CSI.FSType = "ext4"
		pv.Spec.MountOptions = []string{"noatime", "discard"}
	})
	e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1"}, objects...)
	setUp(t, e, csiClaimPod("uid-1"))
	want := &csipb.VolumeCapability_MountVolume{FsType: "ext4", MountFlags: []string{"noatime", "discard"}}
	if len(node.stages) != 1 || len(node.publishes) != 1 {
		t.Fatalf("stages %d publishes %d, want one each", len(node.stages), len(node.publishes))
	}
	for call, capability := range map[string]*csipb.VolumeCapability{"NodeStageVolume": node.stages[0].VolumeCapability, "NodePublishVolume": node.publishes[0].VolumeCapability} {
		if diff := cmp.Diff(want, capability.GetMount(), protocmp.Transform()); diff != "" {
			t.Errorf("%s's mount capability (-want +got):\n%s", call, diff)
		}
	}
}
