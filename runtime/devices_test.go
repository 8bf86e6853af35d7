package runtime

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The container's volumeDevices as CRI Devices: pure over the pod and the
// volume paths the volume manager gave.
func TestMakeBlockDevices(t *testing.T) {
	claim := func(name string, readOnly bool) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name, ReadOnly: readOnly}}}
	}
	tests := map[string]struct {
		devices []corev1.VolumeDevice
		config  Config
		want    []*runtimeapi.Device
		wantErr string
	}{
		"none": {},
		"each device's link at its path, read-only when claimed so, as the kubelet's permissions": {
			devices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}, {Name: "logs", DevicePath: "/dev/xvdb"}},
			want: []*runtimeapi.Device{
				{ContainerPath: "/dev/xvda", HostPath: "/var/lib/nodelet/pods/uid-1/volumeDevices/kubernetes.io~csi/pv-1", Permissions: "mrw"},
				{ContainerPath: "/dev/xvdb", HostPath: "/var/lib/nodelet/pods/uid-1/volumeDevices/kubernetes.io~local-volume/pv-2", Permissions: "r"},
			},
		},
		"a runtime in a container sees the link where it sees the host": {
			devices: []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}},
			config:  Config{HostPaths: HostPaths{RuntimeRoot: "/host"}},
			want: []*runtimeapi.Device{
				{ContainerPath: "/dev/xvda", HostPath: "/host/var/lib/nodelet/pods/uid-1/volumeDevices/kubernetes.io~csi/pv-1", Permissions: "mrw"},
			},
		},
		"a volume the volume manager did not give: the kubelet's error": {
			devices: []corev1.VolumeDevice{{Name: "cache", DevicePath: "/dev/xvdc"}},
			wantErr: `cannot find volume "cache" to pass into container "app"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := containerTestPod()
			pod.Spec.Volumes = []corev1.Volume{claim("data", false), claim("logs", true)}
			pod.Spec.Containers[0].VolumeDevices = tc.devices
			env := &PodEnv{VolumePaths: map[string]string{
				"data": "/var/lib/nodelet/pods/uid-1/volumeDevices/kubernetes.io~csi/pv-1",
				"logs": "/var/lib/nodelet/pods/uid-1/volumeDevices/kubernetes.io~local-volume/pv-2",
			}}
			m := &Manager{config: tc.config}
			got, err := m.makeBlockDevices(pod, &pod.Spec.Containers[0], env)
			if got := fmt.Sprint(err); (err != nil || tc.wantErr != "") && got != tc.wantErr {
				t.Fatalf("error = %q, want %q", got, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		})
	}
}
