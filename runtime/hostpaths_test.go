package runtime

// Tests of where the runtime is told to find the host's paths: the pure
// decision on plain paths, and the container config generateContainerConfig
// gives a runtime in a container (real folders in t.TempDir(), sub paths
// prepared by fakePrepareSubPath, as in container_test.go).

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func TestHostPathsForRuntime(t *testing.T) {
	inContainer := HostPaths{RuntimeRoot: "/host", Shared: []string{"/var/lib/nodelet", "/var/log/pods/"}}
	tests := map[string]struct {
		paths HostPaths
		path  string
		want  string
	}{
		"a runtime on the host gets the host's path": {
			paths: HostPaths{Shared: []string{"/var/lib/nodelet"}}, path: "/srv/data", want: "/srv/data",
		},
		"a runtime in a container gets a host path under its host root": {
			paths: inContainer, path: "/srv/data", want: "/host/srv/data",
		},
		"the host's root itself": {
			paths: inContainer, path: "/", want: "/host",
		},
		"a path within a shared folder is the same inside and out": {
			paths: inContainer, path: "/var/lib/nodelet/pods/uid-1/etc-hosts", want: "/var/lib/nodelet/pods/uid-1/etc-hosts",
		},
		"a shared folder itself": {
			paths: inContainer, path: "/var/lib/nodelet", want: "/var/lib/nodelet",
		},
		"a shared folder given with a trailing slash": {
			paths: inContainer, path: "/var/log/pods/ns_web_uid", want: "/var/log/pods/ns_web_uid",
		},
		"a sibling whose name starts as a shared folder's is the host's": {
			paths: inContainer, path: "/var/lib/nodelet-data", want: "/host/var/lib/nodelet-data",
		},
		"the folder above a shared one is the host's": {
			paths: inContainer, path: "/var/lib", want: "/host/var/lib",
		},
		"an unclean path is judged clean": {
			paths: inContainer, path: "/var/lib/nodelet/../kubelet/seccomp/a.json", want: "/host/var/lib/kubelet/seccomp/a.json",
		},
		"a relative path is no host path": {
			paths: inContainer, path: "app/0.log", want: "app/0.log",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.paths.ForRuntime(tc.path); got != tc.want {
				t.Errorf("%+v.ForRuntime(%q) = %q, want %q", tc.paths, tc.path, got, tc.want)
			}
		})
	}
}

// TestGenerateContainerConfigForARuntimeInAContainer: a companion's
// runtime, in its own container, gets a hostPath volume's folder and a
// Localhost seccomp profile under its host root; the pod's own files and
// a sub path's bind mount, in nodelet's root folder which that container
// shares, as they are.
func TestGenerateContainerConfigForARuntimeInAContainer(t *testing.T) {
	rootDir := t.TempDir()
	podDir := filepath.Join(rootDir, "pods", "uid-1")
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		t.Fatal(err)
	}
	nodeHosts := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(nodeHosts, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	puller := newImagePuller(critest.NewFakeImageService(), record.NewFakeRecorder(10), testingclock.NewFakeClock(time.Now()))
	puller.users[containerTestImage] = imageUser{UID: ptr.To[int64](0)}
	m := &Manager{config: Config{
		PrepareSubPath: fakePrepareSubPath, HostsFile: nodeHosts,
		HostPaths: HostPaths{RuntimeRoot: "/host", Shared: []string{rootDir}},
	}, puller: puller}

	pod := containerTestPod()
	pod.Spec.HostNetwork = true
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/data"}}}}
	container := &pod.Spec.Containers[0]
	container.VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/sub", SubPath: "in"},
	}
	container.SecurityContext = &corev1.SecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("audit.json")},
	}
	env := &PodEnv{PodDir: podDir, VolumePaths: map[string]string{"data": "/srv/data"}}

	got, err := m.generateContainerConfig(pod, container, ContainerToStart{}, containerTestImage, env)
	if err != nil {
		t.Fatalf("generateContainerConfig() error = %v", err)
	}
	want := []*runtimeapi.Mount{
		{ContainerPath: "/data", HostPath: "/host/srv/data"},
		{ContainerPath: "/sub", HostPath: filepath.Join(podDir, "fake-subpaths", "data", "in", "app", "1")},
		{ContainerPath: "/etc/hosts", HostPath: filepath.Join(podDir, "etc-hosts"), SelinuxRelabel: true},
		{ContainerPath: "/dev/termination-log", HostPath: filepath.Join(podDir, "containers", "app", "0")},
	}
	if diff := cmp.Diff(want, got.Mounts, protocmp.Transform()); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	wantSeccomp := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/host/var/lib/kubelet/seccomp/audit.json"}
	if diff := cmp.Diff(wantSeccomp, got.Linux.SecurityContext.Seccomp, protocmp.Transform()); diff != "" {
		t.Errorf("seccomp profile (-want +got):\n%s", diff)
	}
}
