package runtime

// FuzzGenerateConfigs runs pods decoded from JSON through the CRI config
// builders on a Manager built as the unit tests build one (the CRI fake
// image service from k8s.io/cri-api/pkg/apis/testing behind the puller, a
// recorder that drops events), with no pod folder so that nothing is
// written to disk.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func configFuzzSeeds() []*corev1.Pod {
	rich := containerTestPod()
	rich.Annotations["container.apparmor.security.beta.kubernetes.io/app"] = "localhost/prof"
	rich.Spec.Hostname = "host"
	rich.Spec.Subdomain = "sub"
	rich.Spec.DNSPolicy = corev1.DNSNone
	rich.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}}}
	rich.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsNonRoot: ptr.To(true), SupplementalGroups: []int64{5},
		Sysctls:        []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1024"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	rich.Spec.Volumes = []corev1.Volume{{Name: "data"}, {Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
	rich.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1", Command: []string{"sh", "-c", "$(X)"}}}
	app := &rich.Spec.Containers[0]
	app.Env = []corev1.EnvVar{{Name: "X", Value: "y"}, {Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	app.Args = []string{"$(X)", "$$(X)"}
	app.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolUDP}}
	app.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data", SubPathExpr: "$(X)/sub"}, {Name: "cfg", MountPath: "/cfg", MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)}}
	app.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}, ReadOnlyRootFilesystem: ptr.To(true)}
	app.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	hostNetwork := sandboxTestPod()
	hostNetwork.Spec.HostNetwork = true
	hostNetwork.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	hostNetwork.Spec.Containers[0].Ports[0].HostPort = 8080
	return []*corev1.Pod{sandboxTestPod(), containerTestPod(), rich, hostNetwork}
}

func FuzzGenerateConfigs(f *testing.F) {
	for _, pod := range configFuzzSeeds() {
		data, err := json.Marshal(pod)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, 0, int64(0))
	}
	f.Add([]byte(`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"1e30","memory":"-1"}}}]}}`), 3, int64(-1))
	dir := f.TempDir()
	resolvConf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver 10.0.0.1\nsearch corp.example\noptions ndots:1\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	puller := newImagePuller(critest.NewFakeImageService(), &record.FakeRecorder{}, testingclock.NewFakeClock(time.Now()))
	puller.users[containerTestImage] = imageUser{UID: ptr.To[int64](1000)}
	m := &Manager{
		config: Config{
			PodLogDir: filepath.Join(dir, "logs"), ResolvConf: resolvConf, HostsFile: hosts,
			ClusterDNS: ClusterDNS{Servers: []string{"10.96.0.10"}, Domain: "cluster.local"},
			// No folder made: the path alone is checked.
			PrepareSubPath: func(sp kubecontainer.SubPath) (string, error) { return filepath.Join(sp.VolumePath, sp.Path), nil },
		},
		puller:   puller,
		recorder: &record.FakeRecorder{},
	}
	f.Fuzz(func(t *testing.T, data []byte, restartCount int, backoff int64) {
		var pod corev1.Pod
		if err := json.Unmarshal(data, &pod); err != nil {
			return
		}
		// ComputePodActions plans no other counts and back-offs
		// (FuzzComputePodActions).
		restartCount = max(restartCount, 0) % 1000
		plan := ContainerToStart{RestartCount: restartCount, Backoff: time.Duration(max(backoff, 0)) % (MaxRestartBackoff + 1)}
		env := &PodEnv{VolumePaths: map[string]string{}, podIPs: []string{"10.0.0.5"}}
		for _, v := range pod.Spec.Volumes {
			env.VolumePaths[v.Name] = filepath.Join(dir, "volumes", v.Name)
		}

		sandbox, err := m.generateSandboxConfig(&pod, uint32(restartCount), env)
		if err == nil {
			id, ok := identityFromLabels(sandbox.Labels)
			want := kubecontainer.PodIdentity{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
			if (ok || want.UID != "" && want.Name != "" && want.Namespace != "") && id != want {
				t.Errorf("sandbox labels read back as %+v, want %+v", id, want)
			}
		}

		containers := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
		for i := range containers {
			for _, imageRef := range []string{containerTestImage, "sha256:unknown"} {
				config, err := m.generateContainerConfig(&pod, &containers[i], plan, imageRef, env)
				if err != nil {
					continue
				}
				if got := config.Labels[kubecontainer.LabelContainerName]; got != containers[i].Name {
					t.Errorf("container %q labelled as %q", containers[i].Name, got)
				}
				info := decodeContainerAnnotations(config.Annotations)
				if info.RestartCount != plan.RestartCount || info.RestartBackoff != plan.Backoff || info.Hash != HashContainer(&containers[i]) {
					t.Errorf("annotations of container %q read back as %+v, want restart count %d, back-off %v", containers[i].Name, info, plan.RestartCount, plan.Backoff)
				}
				if config.Metadata.Attempt != uint32(plan.RestartCount) {
					t.Errorf("container %q has attempt %d, want %d", containers[i].Name, config.Metadata.Attempt, plan.RestartCount)
				}
			}
		}
	})
}
