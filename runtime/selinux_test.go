package runtime

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Each mount of a volume the volume manager has relabelled asks the
// runtime to relabel it (CRI selinux_relabel), every container's and
// every mount's, read-only ones too, as the kubelet's makeMounts: pure
// over the pod and the PodEnv.
func TestMakeMountsAsksForTheRelabellingOfTheVolumesThatNeedIt(t *testing.T) {
	pod := containerTestPod()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}},
	}
	container := &pod.Spec.Containers[0]
	container.TerminationMessagePath = ""
	container.VolumeMounts = []corev1.VolumeMount{
		{Name: "cache", MountPath: "/cache"},
		{Name: "cache", MountPath: "/cache-ro", ReadOnly: true},
		{Name: "logs", MountPath: "/logs"},
	}
	cache := "/var/lib/nodelet/pods/uid-1/volumes/kubernetes.io~empty-dir/cache"
	env := &PodEnv{
		VolumePaths:    map[string]string{"cache": cache, "logs": "/var/log"},
		SELinuxRelabel: map[string]bool{"cache": true},
	}
	m := &Manager{}
	got, err := m.makeMounts(pod, container, 0, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/cache", HostPath: cache, SelinuxRelabel: true},
		{ContainerPath: "/cache-ro", HostPath: cache, Readonly: true, SelinuxRelabel: true},
		{ContainerPath: "/logs", HostPath: "/var/log"},
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}

	// A host without SELinux: the volume manager relabels nothing, and
	// nothing is asked.
	env.SELinuxRelabel = nil
	got, err = m.makeMounts(pod, container, 0, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, mount := range got {
		if mount.SelinuxRelabel {
			t.Errorf("mount %s: relabelled on a host without SELinux", mount.ContainerPath)
		}
	}
}
