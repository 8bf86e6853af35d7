// Tests of mounting with the pod's SELinux label. This machine has no
// SELinux: the host is faked (Options.SELinuxEnabled), and so is its
// policy (fakeSELinuxLabels, in place of go-selinux); the CSI driver is
// the in-process fakeCSINode, the API client-go's fake clientset.
package volume

import (
	"errors"
	"fmt"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// fakeSELinuxLabels makes a container's file label from its level, as
// the host's policy would with container_file_t; level "bad" cannot be
// made.
type fakeSELinuxLabels struct{}

func (fakeSELinuxLabels) FileLabel(opts *corev1.SELinuxOptions) (string, error) {
	if opts.Level == "bad" {
		return "", errors.New("bad level")
	}
	return "system_u:object_r:container_file_t:" + opts.Level, nil
}

func TestMountSELinuxLabel(t *testing.T) {
	level := func(l string) *corev1.SELinuxOptions { return &corev1.SELinuxOptions{Level: l} }
	container := func(opts *corev1.SELinuxOptions, volumes ...string) corev1.Container {
		c := corev1.Container{Name: "c"}
		if opts != nil {
			c.SecurityContext = &corev1.SecurityContext{SELinuxOptions: opts}
		}
		for _, v := range volumes {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v, MountPath: "/" + v})
		}
		return c
	}
	tests := map[string]struct {
		podOptions     *corev1.SELinuxOptions
		policy         corev1.PodSELinuxChangePolicy
		containers     []corev1.Container
		modes          []corev1.PersistentVolumeAccessMode
		noContextMount bool
		want           string
		wantErr        string
	}{
		"a ReadWriteOncePod volume of a driver that mounts with a context: the containers' label": {
			containers: []corev1.Container{container(level("s0:c1,c2"), "data"), container(level("s0:c1,c2"), "data")},
			want:       "system_u:object_r:container_file_t:s0:c1,c2",
		},
		"the pod's options for a container without its own": {
			podOptions: level("s0:c3,c4"),
			containers: []corev1.Container{container(nil, "data")},
			want:       "system_u:object_r:container_file_t:s0:c3,c4",
		},
		"containers that do not mount the volume do not count": {
			containers: []corev1.Container{container(level("s0:c1,c2"), "data"), container(level("s0:c5,c6"), "logs")},
			want:       "system_u:object_r:container_file_t:s0:c1,c2",
		},
		"no SELinux options: no label": {
			containers: []corev1.Container{container(nil, "data")},
		},
		"seLinuxChangePolicy Recursive: no label, the runtime relabels": {
			policy:     corev1.SELinuxChangePolicyRecursive,
			containers: []corev1.Container{container(level("s0:c1,c2"), "data")},
		},
		"a driver that does not mount with a context: no label": {
			containers:     []corev1.Container{container(level("s0:c1,c2"), "data")},
			noContextMount: true,
		},
		"a ReadWriteOnce volume: no label (the SELinuxMount feature is off)": {
			modes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			containers: []corev1.Container{container(level("s0:c1,c2"), "data")},
		},
		"a ReadWriteOncePod volume with two labels: the kubelet's error": {
			containers: []corev1.Container{container(level("s0:c5,c6"), "data"), container(level("s0:c1,c2"), "data")},
			wantErr:    "multiple SELinux labels found: system_u:object_r:container_file_t:s0:c1,c2,system_u:object_r:container_file_t:s0:c5,c6",
		},
		"... even of a plugin that does not mount with a context": {
			containers:     []corev1.Container{container(level("s0:c5,c6"), "data"), container(level("s0:c1,c2"), "data")},
			noContextMount: true,
			wantErr:        "multiple SELinux labels found: system_u:object_r:container_file_t:s0:c1,c2,system_u:object_r:container_file_t:s0:c5,c6",
		},
		"a ReadWriteOnce volume with two labels: only the kubelet's warning": {
			modes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			containers: []corev1.Container{container(level("s0:c5,c6"), "data"), container(level("s0:c1,c2"), "data")},
		},
		"a label that cannot be made: the kubelet's error": {
			containers: []corev1.Container{container(level("bad"), "data")},
			wantErr:    `failed to construct SELinux label from context "&SELinuxOptions{User:,Role:,Type:,Level:bad,}": bad level`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := makePod()
			pod.Spec.Containers = tc.containers
			pod.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: tc.podOptions}
			if tc.policy != "" {
				pod.Spec.SecurityContext.SELinuxChangePolicy = &tc.policy
			}
			pv := csiPV(nil)
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
			if tc.modes != nil {
				pv.Spec.AccessModes = tc.modes
			}
			got, err := mountSELinuxLabel(pod, "data", pv, !tc.noContextMount, fakeSELinuxLabels{})
			if got := fmt.Sprint(err); (err != nil || tc.wantErr != "") && got != tc.wantErr {
				t.Fatalf("error = %q, want %q", got, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("label = %q, want %q", got, tc.want)
			}
		})
	}
}

// A ReadWriteOncePod volume of a driver with seLinuxMount is staged and
// published with the pod's label, and not relabelled; without SELinux on
// the host, nothing of it.
func TestCSIVolumeIsMountedWithThePodsSELinuxLabel(t *testing.T) {
	for _, host := range []bool{true, false} {
		node := &fakeCSINode{}
		drivers := &fakeCSIDrivers{node: node, registered: true}
		objects := csiClaimObjects()
		objects[1] = csiPV(func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
			pv.Spec.MountOptions = []string{"noatime"}
		})
		objects[2] = csiDriverObject(func(spec *storagev1.CSIDriverSpec) { spec.SELinuxMount = ptr.To(true) })
		e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1", SELinuxEnabled: func() bool { return host }, SELinuxLabels: fakeSELinuxLabels{}}, objects...)
		pod := csiClaimPod("uid-1")
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1,c2"}}
		setUp(t, e, pod)

		want := []string{"noatime"}
		if host {
			want = append(want, `context="system_u:object_r:container_file_t:s0:c1,c2"`)
		}
		if len(node.stages) != 1 || len(node.publishes) != 1 {
			t.Fatalf("stages %d publishes %d, want one each", len(node.stages), len(node.publishes))
		}
		for call, capability := range map[string]*csipb.VolumeCapability{"NodeStageVolume": node.stages[0].VolumeCapability, "NodePublishVolume": node.publishes[0].VolumeCapability} {
			if diff := cmp.Diff(want, capability.GetMount().GetMountFlags()); diff != "" {
				t.Errorf("SELinux host %t: %s's mount flags (-want +got):\n%s", host, call, diff)
			}
		}
		if e.m.SELinuxRelabel(pod)["data"] {
			t.Errorf("SELinux host %t: a volume mounted with its label is relabelled too", host)
		}
	}
}

// Two containers of different labels on a ReadWriteOncePod claim: the
// kubelet's FailedMount, and the driver is not called.
func TestCSIVolumeOfTwoSELinuxLabelsWaits(t *testing.T) {
	node := &fakeCSINode{}
	drivers := &fakeCSIDrivers{node: node, registered: true}
	objects := csiClaimObjects()
	objects[1] = csiPV(func(pv *corev1.PersistentVolume) {
		pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	})
	e := newTestEnv(t, Options{CSI: drivers, NodeName: "node-1", SELinuxEnabled: func() bool { return true }, SELinuxLabels: fakeSELinuxLabels{}}, objects...)
	pod := csiClaimPod("uid-1")
	sidecar := pod.Spec.Containers[0]
	sidecar.Name = "sidecar"
	sidecar.SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c5,c6"}}
	pod.Spec.Containers = append(pod.Spec.Containers, sidecar)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1,c2"}}

	_, _, err := e.m.SetUpPod(t.Context(), pod)

	want := "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: " +
		"multiple SELinux labels found: system_u:object_r:container_file_t:s0:c1,c2,system_u:object_r:container_file_t:s0:c5,c6"
	if errs := UserErrors(err); len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("user errors = %v, want [%s]", errs, want)
	}
	if len(node.stages) != 0 || len(node.publishes) != 0 {
		t.Errorf("the driver was called: stages %d publishes %d", len(node.stages), len(node.publishes))
	}
}
