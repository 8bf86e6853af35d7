package runtime

// Tests of the Pod → ContainerConfig mapping. The pure helpers (resources,
// QoS) run on plain values; generateContainerConfig runs
// against real folders in t.TempDir(), with sub paths prepared by a stand-in
// that names where volume.PrepareSubPath would bind them (its real mounts
// are tested in volume/).

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// containerTestImage is the image ID the tests' puller knows the user of.
const containerTestImage = "sha256:busybox"

func containerTestPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "web",
			Namespace:   "default",
			UID:         "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"team": "blue"},
		},
		Spec: corev1.PodSpec{
			NodeName:           "node-1",
			ServiceAccountName: "default",
			Containers: []corev1.Container{{
				Name:                     "app",
				Image:                    "busybox:1",
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
		},
	}
}

func TestGenerateContainerConfig(t *testing.T) {
	dir := t.TempDir()
	podDir := filepath.Join(dir, "pods", "uid-1")
	dataVolume := filepath.Join(podDir, "volumes", "data")
	configVolume := filepath.Join(podDir, "volumes", "config")
	for _, d := range []string{dataVolume, configVolume} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := &PodEnv{
		PodDir:      podDir,
		VolumePaths: map[string]string{"data": dataVolume, "config": configVolume},
	}
	// A host-network pod's /etc/hosts is made from the node's.
	nodeHosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(nodeHosts, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := ContainerToStart{Index: 0, RestartCount: 3, Backoff: 20 * time.Second}
	terminationMount := &runtimeapi.Mount{
		ContainerPath: "/dev/termination-log",
		HostPath:      filepath.Join(podDir, "containers", "app", "3"),
	}

	baseWant := func(pod *corev1.Pod) *runtimeapi.ContainerConfig {
		container := &pod.Spec.Containers[0]
		return &runtimeapi.ContainerConfig{
			Metadata:    &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
			Image:       &runtimeapi.ImageSpec{Image: containerTestImage, UserSpecifiedImage: container.Image},
			Mounts:      []*runtimeapi.Mount{terminationMount},
			LogPath:     "app/3.log",
			Labels:      newContainerLabels(pod, container),
			Annotations: newContainerAnnotations(pod, container, 3, 20*time.Second),
			Linux: &runtimeapi.LinuxContainerConfig{
				Resources: &runtimeapi.LinuxContainerResources{
					CpuShares:   2,
					CpuPeriod:   100000,
					OomScoreAdj: 1000,
				},
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
					NamespaceOptions: &runtimeapi.NamespaceOption{
						Network: runtimeapi.NamespaceMode_POD,
						Pid:     runtimeapi.NamespaceMode_CONTAINER,
						Ipc:     runtimeapi.NamespaceMode_POD,
					},
					Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
				},
			},
		}
	}
	kv := func(key, value string) *runtimeapi.KeyValue {
		return &runtimeapi.KeyValue{Key: key, Value: []byte(value)}
	}

	tests := map[string]struct {
		mutatePod func(*corev1.Pod)
		imageUser *imageUser
		// unknownImage leaves the image's user unknown to the puller.
		unknownImage bool
		env          *PodEnv
		mutateWant   func(*runtimeapi.ContainerConfig)
		wantErr      string
	}{
		"a plain container": {},
		"command, args, working dir and terminal come from the spec": {
			mutatePod: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.Command = []string{"/bin/sh", "-c"}
				c.Args = []string{"sleep 3600"}
				c.WorkingDir = "/srv"
				c.Stdin, c.StdinOnce, c.TTY = true, true, true
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Command = []string{"/bin/sh", "-c"}
				c.Args = []string{"sleep 3600"}
				c.WorkingDir = "/srv"
				c.Stdin, c.StdinOnce, c.Tty = true, true, true
			},
		},
		"env values see earlier variables and commands see all of them": {
			mutatePod: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.Env = []corev1.EnvVar{
					{Name: "A", Value: "1"},
					{Name: "B", Value: "$(A)-2"},
					{Name: "C", Value: "$(LATER)"},
					{Name: "LATER", Value: "x"},
					{Name: "ESCAPED", Value: "$$(A)"},
					{Name: "EMPTY"},
				}
				c.Command = []string{"echo", "$(B)", "$$(A)", "$(LATER)", "$(NOPE)"}
				c.Args = []string{"$(C)"}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Envs = []*runtimeapi.KeyValue{kv("A", "1"), kv("B", "1-2"), kv("C", "$(LATER)"), kv("LATER", "x"), kv("ESCAPED", "$(A)"), kv("EMPTY", "")}
				c.Command = []string{"echo", "1-2", "$(A)", "x", "$(NOPE)"}
				c.Args = []string{"$(LATER)"}
			},
		},
		"a name given twice keeps its place and takes its last value": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "A", Value: "$(A)$(B)"}}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Envs = []*runtimeapi.KeyValue{kv("A", "12"), kv("B", "2")}
			},
		},
		"fieldRef reads the pod's identity": {
			mutatePod: func(p *corev1.Pod) {
				fieldRef := func(name, path string) corev1.EnvVar {
					return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
				}
				p.Spec.Containers[0].Env = []corev1.EnvVar{
					fieldRef("POD_NAME", "metadata.name"),
					fieldRef("POD_NAMESPACE", "metadata.namespace"),
					fieldRef("POD_UID", "metadata.uid"),
					fieldRef("NODE_NAME", "spec.nodeName"),
					fieldRef("SA", "spec.serviceAccountName"),
					fieldRef("APP", "metadata.labels['app']"),
					fieldRef("TEAM", "metadata.annotations['team']"),
					{Name: "GREETING", Value: "hello from $(POD_NAME)"},
				}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Envs = []*runtimeapi.KeyValue{
					kv("POD_NAME", "web"), kv("POD_NAMESPACE", "default"), kv("POD_UID", "uid-1"),
					kv("NODE_NAME", "node-1"), kv("SA", "default"), kv("APP", "web"), kv("TEAM", "blue"),
					kv("GREETING", "hello from web"),
				}
			},
		},
		"env from a ConfigMap and the service variables, which commands see too": {
			mutatePod: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.EnvFrom = []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
				c.Env = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode",
				}}}}
				c.Command = []string{"run", "--api=$(KUBERNETES_SERVICE_HOST)", "--mode=$(CFG_mode)"}
			},
			env: &PodEnv{
				PodDir: podDir,
				EnvSources: kubecontainer.EnvSources{
					Objects:    kubecontainer.EnvObjects{ConfigMaps: map[string]*corev1.ConfigMap{"app": {Data: map[string]string{"mode": "fast"}}}},
					ServiceEnv: map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
				},
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Envs = []*runtimeapi.KeyValue{kv("CFG_mode", "fast"), kv("MODE", "fast"), kv("KUBERNETES_SERVICE_HOST", "10.96.0.1")}
				c.Command = []string{"run", "--api=10.96.0.1", "--mode=fast"}
			},
		},
		"a missing ConfigMap key is the kubelet's error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: "mode",
				}}}}
			},
			env: &PodEnv{
				PodDir:     podDir,
				EnvSources: kubecontainer.EnvSources{Objects: kubecontainer.EnvObjects{ConfigMaps: map[string]*corev1.ConfigMap{"app": {}}}},
			},
			wantErr: "couldn't find key mode in ConfigMap default/app",
		},
		"a missing Secret is the kubelet's error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
			},
			wantErr: `secret "creds" not found`,
		},
		"volumes written from the API are mounted read-only whatever the mount says": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{
					{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
					{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				}
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/app"},
					{Name: "data", MountPath: "/data"},
				}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/etc/app", HostPath: configVolume, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
					{ContainerPath: "/data", HostPath: dataVolume, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
					terminationMount,
				}
			},
		},
		"volume mounts bind the volumes' host folders": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
					{Name: "data", MountPath: "/data", MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)},
					{Name: "config", MountPath: "/etc/app", ReadOnly: true, MountPropagation: ptr.To(corev1.MountPropagationNone)},
					{Name: "data", MountPath: "/shared", MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
				}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/data", HostPath: dataVolume, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
					{ContainerPath: "/etc/app", HostPath: configVolume, Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE},
					{ContainerPath: "/shared", HostPath: dataVolume, Propagation: runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL},
					terminationMount,
				}
			},
		},
		"a subPath mounts a folder of the volume, made when missing": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/logs", SubPath: "logs/app"}}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/logs", HostPath: filepath.Join(podDir, "fake-subpaths", "data", "logs", "app", "app", "0")},
					terminationMount,
				}
			},
		},
		"a subPathExpr expands the container's env": {
			mutatePod: func(p *corev1.Pod) {
				c := &p.Spec.Containers[0]
				c.Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
				c.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/logs", SubPathExpr: "logs/$(POD)"}}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Envs = []*runtimeapi.KeyValue{kv("POD", "web")}
				c.Mounts = []*runtimeapi.Mount{
					{ContainerPath: "/logs", HostPath: filepath.Join(podDir, "fake-subpaths", "data", "logs", "web", "app", "0")},
					terminationMount,
				}
			},
		},
		"a subPathExpr naming an unset variable is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/logs", SubPathExpr: "logs/$(NOPE)"}}
			},
			wantErr: `subPathExpr of volumeMount "data" of container "app": missing value for NOPE`,
		},
		"a volume the pod env lacks is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cache", MountPath: "/cache"}}
			},
			wantErr: `cannot find volume "cache" to mount into container "app"`,
		},
		"an absolute subPath is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "/etc"}}
			},
			wantErr: "error SubPath `/etc` must not be an absolute path",
		},
		"a subPath with .. is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/x", SubPath: "a/../../config"}}
			},
			wantErr: "unable to provision SubPath `a/../../config`: must not contain '..'",
		},
		"an unknown mount propagation is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/x", MountPropagation: ptr.To[corev1.MountPropagationMode]("Sideways")}}
			},
			wantErr: `invalid MountPropagation mode: "Sideways"`,
		},
		"without a pod folder there is no termination message file": {
			env:        &PodEnv{VolumePaths: env.VolumePaths},
			mutateWant: func(c *runtimeapi.ContainerConfig) { c.Mounts = nil },
		},
		"without a termination message path there is no termination message file": {
			mutatePod:  func(p *corev1.Pod) { p.Spec.Containers[0].TerminationMessagePath = "" },
			mutateWant: func(c *runtimeapi.ContainerConfig) { c.Mounts = nil },
		},
		"the container's security context, with the pod's as defaults": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{
					RunAsUser:          ptr.To[int64](1000),
					RunAsGroup:         ptr.To[int64](1000),
					FSGroup:            ptr.To[int64](2000),
					SupplementalGroups: []int64{3000},
					SeccompProfile:     &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					AppArmorProfile:    &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault},
					SELinuxOptions:     &corev1.SELinuxOptions{Level: "s0:c1"},
				}
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{
						Add:  []corev1.Capability{"NET_ADMIN", "SYS_TIME"},
						Drop: []corev1.Capability{"ALL"},
					},
					RunAsGroup:               ptr.To[int64](1500),
					ReadOnlyRootFilesystem:   ptr.To(true),
					AllowPrivilegeEscalation: ptr.To(false),
				}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				sc := c.Linux.SecurityContext
				sc.Capabilities = &runtimeapi.Capability{
					AddCapabilities:  []string{"NET_ADMIN", "SYS_TIME"},
					DropCapabilities: []string{"ALL"},
				}
				sc.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
				sc.RunAsGroup = &runtimeapi.Int64Value{Value: 1500}
				sc.ReadonlyRootfs = true
				sc.NoNewPrivs = true
				sc.SupplementalGroups = []int64{2000, 3000}
				sc.SelinuxOptions = &runtimeapi.SELinuxOption{Level: "s0:c1"}
				sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
				sc.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
				sc.ApparmorProfile = "runtime/default"
			},
		},
		"the groups of the pod's volumes, after the pod's own": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{SupplementalGroups: []int64{3000}}
			},
			env: &PodEnv{VolumePaths: env.VolumePaths, PodDir: env.PodDir, ExtraSupplementalGroups: []int64{4321}},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Linux.SecurityContext.SupplementalGroups = []int64{3000, 4321}
			},
		},
		"a privileged container with its own profiles": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				}
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
					Privileged:      ptr.To(true),
					SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")},
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("k8s-apparmor-example")},
					ProcMount:       ptr.To(corev1.UnmaskedProcMount),
				}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				sc := c.Linux.SecurityContext
				sc.Privileged = true
				sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kubelet/seccomp/profiles/audit.json"}
				sc.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-apparmor-example"}
				sc.ApparmorProfile = "localhost/k8s-apparmor-example"
				sc.MaskedPaths = []string{}
				sc.ReadonlyPaths = []string{}
			},
		},
		"the deprecated AppArmor annotation still applies": {
			mutatePod: func(p *corev1.Pod) {
				p.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+"app"] = "unconfined"
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Linux.SecurityContext.Apparmor = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
				c.Linux.SecurityContext.ApparmorProfile = "unconfined"
			},
		},
		"a Localhost seccomp profile without a name is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
			},
			wantErr: "localhostProfile must be set",
		},
		"host namespaces are the sandbox's": {
			mutatePod: func(p *corev1.Pod) { p.Spec.HostNetwork = true; p.Spec.ShareProcessNamespace = ptr.To(true) },
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Linux.SecurityContext.NamespaceOptions.Network = runtimeapi.NamespaceMode_NODE
				c.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
				hosts := &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: filepath.Join(podDir, "etc-hosts"), SelinuxRelabel: true}
				c.Mounts = append([]*runtimeapi.Mount{hosts}, c.Mounts...)
			},
		},
		"runAsNonRoot with a non-root runAsUser starts": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Linux.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: 1000}
			},
		},
		"runAsNonRoot with an image whose user is not root starts": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
			},
			imageUser: &imageUser{UID: ptr.To[int64](65534)},
		},
		"runAsNonRoot with runAsUser 0 is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](0)}
			},
			wantErr: "container's runAsUser breaks non-root policy",
		},
		"runAsNonRoot with an image that runs as root is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
			},
			wantErr: `container has runAsNonRoot and image will run as root (pod: "web_default(uid-1)", container: app)`,
		},
		"runAsNonRoot with an image user given by name is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
			},
			imageUser: &imageUser{Username: "nginx"},
			wantErr:   "container has runAsNonRoot and image has non-numeric user (nginx)",
		},
		"runAsNonRoot with an image of unknown user is an error": {
			mutatePod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
			},
			unknownImage: true,
			wantErr:      "container has runAsNonRoot and the image's user is unknown",
		},
		"an image of unknown user starts without runAsNonRoot": {
			unknownImage: true,
		},
		"resources of a Guaranteed pod": {
			mutatePod: func(p *corev1.Pod) {
				resources := corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("500m"),
					corev1.ResourceMemory: resource.MustParse("128Mi"),
				}
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: resources, Limits: resources}
			},
			mutateWant: func(c *runtimeapi.ContainerConfig) {
				c.Linux.Resources = &runtimeapi.LinuxContainerResources{
					CpuShares:          512,
					CpuPeriod:          100000,
					CpuQuota:           50000,
					MemoryLimitInBytes: 128 << 20,
					OomScoreAdj:        -997,
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			puller := newImagePuller(critest.NewFakeImageService(), record.NewFakeRecorder(10), testingclock.NewFakeClock(time.Now()))
			user := imageUser{UID: ptr.To[int64](0)}
			if tc.imageUser != nil {
				user = *tc.imageUser
			}
			if !tc.unknownImage {
				puller.users[containerTestImage] = user
			}
			m := &Manager{config: Config{PodLogDir: filepath.Join(dir, "logs"), PrepareSubPath: fakePrepareSubPath, HostsFile: nodeHosts}, puller: puller}

			pod := containerTestPod()
			if tc.mutatePod != nil {
				tc.mutatePod(pod)
			}
			podEnv := env
			if tc.env != nil {
				podEnv = tc.env
			}
			got, err := m.generateContainerConfig(pod, &pod.Spec.Containers[0], plan, containerTestImage, podEnv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("generateContainerConfig() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("generateContainerConfig() error = %v", err)
			}
			want := baseWant(pod)
			if tc.mutateWant != nil {
				tc.mutateWant(want)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("generateContainerConfig() mismatch (-want +got):\n%s", diff)
			}
			// Every host path handed to the runtime exists.
			for _, mount := range got.Mounts {
				if _, err := os.Stat(mount.HostPath); err != nil {
					t.Errorf("mount %s: host path: %v", mount.ContainerPath, err)
				}
			}
		})
	}
}

func TestTerminationMessageFileStartsEmpty(t *testing.T) {
	podDir := t.TempDir()
	m := &Manager{}
	container := &containerTestPod().Spec.Containers[0]
	mount := m.terminationMessageMount(container, 0, podDir)
	if mount == nil {
		t.Fatal("terminationMessageMount() = nil, want a mount")
	}
	if err := os.WriteFile(mount.HostPath, []byte("last words"), 0o666); err != nil {
		t.Fatal(err)
	}
	// An instance with the same restart count, after the runtime lost the
	// previous one, must not inherit its message.
	again := m.terminationMessageMount(container, 0, podDir)
	content, err := os.ReadFile(again.HostPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(content) != 0 {
		t.Errorf("termination message file holds %q, want it empty", content)
	}
	info, err := os.Stat(again.HostPath)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o666 {
		t.Errorf("termination message file mode = %v, want 0666 so any user can write it", mode)
	}
}

// fakePrepareSubPath makes, in place of a bind mount, a folder named for
// the mount it stands for, under the pod's folder.
func fakePrepareSubPath(sp kubecontainer.SubPath) (string, error) {
	target := filepath.Join(sp.PodDir, "fake-subpaths", sp.VolumeName, sp.Path, sp.ContainerName, strconv.Itoa(sp.MountIndex))
	return target, os.MkdirAll(target, 0o755)
}
