package volume

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Tables of the claim decisions (claim.go): plain values, no API server.

func boundClaim() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop", UID: "claim-uid", Finalizers: []string{pvcProtectionFinalizer}},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

func TestCheckClaim(t *testing.T) {
	tests := map[string]struct {
		mutate func(*corev1.PersistentVolumeClaim)
		err    error
		want   string
	}{
		"bound: usable": {},
		"missing": {
			err:  apierrors.NewNotFound(corev1.Resource("persistentvolumeclaims"), "data"),
			want: `failed to fetch PVC from API server: persistentvolumeclaims "data" not found`,
		},
		"pending": {
			mutate: func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimPending; c.Spec.VolumeName = "" },
			want:   "PVC is not bound",
		},
		"lost": {
			mutate: func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = corev1.ClaimLost },
			want:   "PVC is not bound",
		},
		"bound with no volume name": {
			mutate: func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "" },
			want:   "PVC has empty pvc.Spec.VolumeName",
		},
		"being deleted, still protected: usable (a running pod keeps it)": {
			mutate: func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = ptr.To(metav1.Now()) },
		},
		"being deleted, unprotected": {
			mutate: func(c *corev1.PersistentVolumeClaim) { c.DeletionTimestamp = ptr.To(metav1.Now()); c.Finalizers = nil },
			want:   "PVC is being deleted",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			claim := boundClaim()
			if tc.mutate != nil {
				tc.mutate(claim)
			}
			if tc.err != nil {
				claim = nil
			}
			if got := errText(checkClaim(claim, tc.err)); got != tc.want {
				t.Errorf("checkClaim = %q, want %q", got, tc.want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func localPV() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef:               &corev1.ObjectReference{Namespace: "shop", Name: "data", UID: "claim-uid"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt/disks/vol1"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
			}}}},
		},
	}
}

func TestCheckBoundVolume(t *testing.T) {
	tests := map[string]struct {
		mutate func(*corev1.PersistentVolume)
		err    error
		want   string
	}{
		"bound to the claim: usable": {},
		"missing": {
			err:  apierrors.NewNotFound(corev1.Resource("persistentvolumes"), "pv-1"),
			want: `failed to fetch PV pv-1 from API server: persistentvolumes "pv-1" not found`,
		},
		"not bound yet": {
			mutate: func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef = nil },
			want:   "found PV object pv-1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim",
		},
		"bound to another claim of the same name": {
			mutate: func(pv *corev1.PersistentVolume) { pv.Spec.ClaimRef.UID = "old-uid" },
			want:   "found PV object pv-1 but its pv.Spec.ClaimRef.UID old-uid does not point to claim.UID claim-uid",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pv := localPV()
			if tc.mutate != nil {
				tc.mutate(pv)
			}
			if tc.err != nil {
				pv = nil
			}
			if got := errText(checkBoundVolume("pv-1", "claim-uid", pv, tc.err)); got != tc.want {
				t.Errorf("checkBoundVolume = %q, want %q", got, tc.want)
			}
		})
	}
}

func claimPod(readOnly bool) (*corev1.Pod, *corev1.Volume) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop"},
		Spec: corev1.PodSpec{
			Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: readOnly}}}},
			Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		},
	}
	return pod, &pod.Spec.Volumes[0]
}

func TestClaimMountOf(t *testing.T) {
	nodeLabels := map[string]string{"kubernetes.io/hostname": "node-1"}
	tests := map[string]struct {
		readOnly   bool
		mutatePod  func(*corev1.Pod)
		mutatePV   func(*corev1.PersistentVolume)
		nodeLabels map[string]string
		want       claimMount
		wantErr    string
		wantKind   any
	}{
		"a local volume on its node": {
			want: claimMount{pv: "pv-1", kind: claimLocal, path: "/mnt/disks/vol1"},
		},
		"read-only from the claim source": {
			readOnly: true,
			want:     claimMount{pv: "pv-1", kind: claimLocal, path: "/mnt/disks/vol1", readOnly: true},
		},
		"a hostPath volume, with its type": {
			mutatePV: func(pv *corev1.PersistentVolume) {
				pv.Spec.Local = nil
				pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/srv/data", Type: ptr.To(corev1.HostPathDirectoryOrCreate)}
				pv.Spec.NodeAffinity = nil
			},
			want: claimMount{pv: "pv-1", kind: claimHostPath, path: "/srv/data", hostPathType: ptr.To(corev1.HostPathDirectoryOrCreate)},
		},
		"another node's local volume": {
			nodeLabels: map[string]string{"kubernetes.io/hostname": "node-2"},
			wantErr:    `MountVolume.NodeAffinity check failed for volume "pv-1" : no matching NodeSelectorTerms`,
			wantKind:   &MountError{},
		},
		"node labels unknown: no match": {
			nodeLabels: map[string]string{},
			wantErr:    `MountVolume.NodeAffinity check failed for volume "pv-1" : no matching NodeSelectorTerms`,
			wantKind:   &MountError{},
		},
		"an NFS volume: not supported": {
			mutatePV: func(pv *corev1.PersistentVolume) {
				pv.Spec.Local = nil
				pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}
			},
			wantErr:  `volume "data": nfs persistent volumes are not supported by nodelet yet`,
			wantKind: &UnsupportedVolumeError{},
		},
		"a local volume's mount options: its bind mount's": {
			mutatePV: func(pv *corev1.PersistentVolume) { pv.Spec.MountOptions = []string{"noexec", "nosuid"} },
			want:     claimMount{pv: "pv-1", kind: claimLocal, path: "/mnt/disks/vol1", mountOptions: []string{"noexec", "nosuid"}},
		},
		"the beta annotation's mount options before the field's, as the kubelet reads them": {
			mutatePV: func(pv *corev1.PersistentVolume) {
				pv.Annotations = map[string]string{"volume.beta.kubernetes.io/mount-options": "ro,nodev"}
				pv.Spec.MountOptions = []string{"noexec"}
			},
			want: claimMount{pv: "pv-1", kind: claimLocal, path: "/mnt/disks/vol1", mountOptions: []string{"ro", "nodev"}},
		},
		"a mount option that is no bind mount's flag: refused, not ignored": {
			mutatePV: func(pv *corev1.PersistentVolume) { pv.Spec.MountOptions = []string{"noexec", "uid=1000"} },
			wantErr:  `MountVolume.SetUp failed for volume "pv-1" : mount option "uid=1000" is not a bind mount's flag: nodelet mounts local volumes with ro, rw, noexec, exec, nosuid, suid, nodev, dev, noatime, atime, nodiratime, diratime, relatime, norelatime, strictatime, sync, async, dirsync and defaults only`,
			wantKind: &MountError{},
		},
		"a hostPath volume with mount options: the kubelet's support check": {
			mutatePV: func(pv *corev1.PersistentVolume) {
				pv.Spec.Local = nil
				pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/srv/data"}
				pv.Spec.NodeAffinity = nil
				pv.Spec.MountOptions = []string{"noexec"}
			},
			wantErr:  `MountVolume.MountOptionSupport check failed for volume "pv-1" : mount options are not supported for this volume type`,
			wantKind: &MountError{},
		},
		"a Block volume in volumeMounts: the kubelet's error": {
			mutatePV: func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) },
			wantErr:  "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: volume data has volumeMode Block, but is specified in volumeMounts",
			wantKind: &ClaimError{},
		},
		"a Filesystem volume in volumeDevices: the kubelet's error": {
			mutatePod: func(pod *corev1.Pod) {
				pod.Spec.Containers[0].VolumeMounts = nil
				pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
			},
			wantErr:  "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: volume data has volumeMode Filesystem, but is specified in volumeDevices",
			wantKind: &ClaimError{},
		},
		"a Block local volume in volumeDevices: mapped": {
			mutatePod: func(pod *corev1.Pod) {
				pod.Spec.Containers[0].VolumeMounts = nil
				pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
			},
			mutatePV: func(pv *corev1.PersistentVolume) {
				pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
				// Not mounted: the kubelet maps it whatever they say.
				pv.Spec.MountOptions = []string{"noexec"}
			},
			want: claimMount{pv: "pv-1", kind: claimLocal, path: "/mnt/disks/vol1", block: true},
		},
		"a Block local volume on another node: the kubelet's map error": {
			mutatePod: func(pod *corev1.Pod) {
				pod.Spec.Containers[0].VolumeMounts = nil
				pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
			},
			mutatePV:   func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock) },
			nodeLabels: map[string]string{"kubernetes.io/hostname": "node-2"},
			wantErr:    `MapVolume.NodeAffinity check failed for volume "pv-1" : no matching NodeSelectorTerms`,
			wantKind:   &MountError{},
		},
		"a Block hostPath volume: no block plugin, as under the kubelet": {
			mutatePod: func(pod *corev1.Pod) {
				pod.Spec.Containers[0].VolumeMounts = nil
				pod.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
			},
			mutatePV: func(pv *corev1.PersistentVolume) {
				pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
				pv.Spec.Local = nil
				pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/dev/sdb"}
			},
			wantErr:  `MapVolume.FindMapperPluginBySpec failed for volume "pv-1" : no block volume plugin matched: hostPath volumes cannot be of volumeMode Block`,
			wantKind: &MountError{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod, vol := claimPod(tc.readOnly)
			if tc.mutatePod != nil {
				tc.mutatePod(pod)
			}
			pv := localPV()
			if tc.mutatePV != nil {
				tc.mutatePV(pv)
			}
			labels := nodeLabels
			if tc.nodeLabels != nil {
				labels = tc.nodeLabels
			}
			got, err := claimMountOf(pod, vol, vol.PersistentVolumeClaim.ReadOnly, pv, labels)
			if errText(err) != tc.wantErr {
				t.Fatalf("claimMountOf error = %q, want %q", errText(err), tc.wantErr)
			}
			if err != nil {
				if !IsUserError(err) || !errorsAsKind(err, tc.wantKind) {
					t.Errorf("error %T, want a user error of type %T", err, tc.wantKind)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(claimMount{})); diff != "" {
				t.Errorf("claimMountOf (-want +got):\n%s", diff)
			}
		})
	}
}

func errorsAsKind(err error, kind any) bool {
	switch kind.(type) {
	case *MountError:
		var e *MountError
		return errors.As(err, &e)
	case *ClaimError:
		var e *ClaimError
		return errors.As(err, &e)
	case *UnsupportedVolumeError:
		var e *UnsupportedVolumeError
		return errors.As(err, &e)
	}
	return false
}

func TestExtraSupplementalGroups(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{
		FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{3000},
	}}}
	tests := map[string]struct {
		gids []string
		want []int64
	}{
		"none":                                           {},
		"a volume's group":                               {gids: []string{"4000"}, want: []int64{4000}},
		"the pod's fsGroup is not repeated":              {gids: []string{"2000", "4000"}, want: []int64{4000}},
		"nor its supplemental groups":                    {gids: []string{"3000"}},
		"two volumes of one group: once":                 {gids: []string{"4000", "4000"}, want: []int64{4000}},
		"not a number: skipped, as the kubelet skips it": {gids: []string{"staff", "4001"}, want: []int64{4001}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, extraSupplementalGroups(pod, tc.gids)); diff != "" {
				t.Errorf("extraSupplementalGroups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckReadWriteOncePod(t *testing.T) {
	modes := func(m ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
		pv := localPV()
		pv.Spec.AccessModes = m
		return pv
	}
	rwop := modes(corev1.ReadWriteOncePod)
	tests := map[string]struct {
		pv      *corev1.PersistentVolume
		block   bool
		users   []types.UID
		wantErr string
	}{
		"unused: the pod may have it":                {pv: rwop},
		"used by the pod itself (set up again)":      {pv: rwop, users: []types.UID{"uid-1"}},
		"used by another pod: the kubelet's refusal": {pv: rwop, users: []types.UID{"uid-1", "uid-2"}, wantErr: `MountVolume.SetUp failed for volume "pv-1" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`},
		"a block volume: the kubelet's map refusal":  {pv: rwop, block: true, users: []types.UID{"uid-2"}, wantErr: `MapVolume.SetUpDevice failed for volume "pv-1" : volume uses the ReadWriteOncePod access mode and is already in use by another pod`},
		"ReadWriteOnce: shared by the node's pods":   {pv: modes(corev1.ReadWriteOnce), users: []types.UID{"uid-2"}},
		"several modes: which one is meant is not known, as the kubelet lets it be": {
			pv: modes(corev1.ReadWriteOncePod, corev1.ReadOnlyMany), users: []types.UID{"uid-2"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkReadWriteOncePod(tc.pv, tc.block, "uid-1", tc.users)
			if errText(err) != tc.wantErr {
				t.Fatalf("error = %q, want %q", errText(err), tc.wantErr)
			}
			if err != nil && !IsUserError(err) {
				t.Errorf("error %T is not a user error", err)
			}
		})
	}
}
