package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
	"github.com/nodelet/nodelet/internal/util/expansion"
)

// generateContainerConfig maps one container of a pod to the runtime's
// container configuration. Failures are the user's to fix (a missing
// volume, an unsupported env source, a root image under runAsNonRoot) and
// become CreateContainerConfigError.
func (m *Manager) generateContainerConfig(pod *corev1.Pod, container *corev1.Container, plan ContainerToStart, imageRef string, env *PodEnv) (*runtimeapi.ContainerConfig, error) {
	if env == nil {
		env = &PodEnv{}
	}
	envs, skipped, err := containerEnv(pod, container, env)
	if err != nil {
		return nil, err
	}
	m.recordSkippedEnvFromKeys(pod, skipped)
	values := envMap(envs)

	sc := effectiveSecurityContext(pod, container)
	if err := verifyRunAsNonRoot(pod, container, sc, m.imageUser(imageRef)); err != nil {
		return nil, err
	}

	mounts, err := m.makeMounts(pod, container, plan.RestartCount, values, env)
	if err != nil {
		return nil, err
	}
	devices, err := m.makeBlockDevices(pod, container, env)
	if err != nil {
		return nil, err
	}
	security, err := containerSecurityContext(pod, container, sc, env.userNamespace)
	if err != nil {
		return nil, err
	}
	// The groups of its volumes, after the pod's own, as the kubelet.
	security.SupplementalGroups = append(security.SupplementalGroups, env.ExtraSupplementalGroups...)
	// The runtime reads the profile's file itself, where it sees the host.
	if s := security.Seccomp; s != nil && s.ProfileType == runtimeapi.SecurityProfile_Localhost {
		s.LocalhostRef = m.config.HostPaths.ForRuntime(s.LocalhostRef)
	}

	config := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{
			Name:    container.Name,
			Attempt: uint32(plan.RestartCount),
		},
		Image: &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: container.Image},
		// Left empty, the image's entrypoint and cmd apply in the runtime.
		Command:     expandAll(container.Command, values),
		Args:        expandAll(container.Args, values),
		WorkingDir:  container.WorkingDir,
		Mounts:      mounts,
		Devices:     devices,
		LogPath:     containerLogPath(container.Name, plan.RestartCount),
		Stdin:       container.Stdin,
		StdinOnce:   container.StdinOnce,
		Tty:         container.TTY,
		Labels:      newContainerLabels(pod, container),
		Annotations: newContainerAnnotations(pod, container, plan.RestartCount, plan.Backoff),
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       containerResources(pod, container, m.host),
			SecurityContext: security,
		},
	}
	for _, e := range envs {
		config.Envs = append(config.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	return config, nil
}

// containerLogPath is a container instance's log file, relative to the
// sandbox's log folder: <container>/<restartCount>.log.
func containerLogPath(containerName string, restartCount int) string {
	return filepath.Join(containerName, strconv.Itoa(restartCount)+".log")
}

// ---- Mounts ----

// makeMounts binds each volume mount of the container to the host folder
// prepared for its volume, then adds the pod's hosts file and the
// termination message file.
func (m *Manager) makeMounts(pod *corev1.Pod, container *corev1.Container, restartCount int, envValues map[string]string, env *PodEnv) ([]*runtimeapi.Mount, error) {
	readOnly := readOnlyVolumes(pod)
	var mounts []*runtimeapi.Mount
	for i, vm := range container.VolumeMounts {
		volumePath, ok := env.VolumePaths[vm.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q", vm.Name, container.Name)
		}
		subPath := vm.SubPath
		if vm.SubPathExpr != "" {
			var err error
			if subPath, err = expandSubPathExpr(vm.SubPathExpr, envValues); err != nil {
				return nil, fmt.Errorf("subPathExpr of volumeMount %q of container %q: %w", vm.Name, container.Name, err)
			}
		}
		hostPath := volumePath
		if subPath != "" {
			if err := validateSubPath(subPath); err != nil {
				return nil, err
			}
			var err error
			if hostPath, err = m.prepareSubPath(kubecontainer.SubPath{
				VolumeName: vm.Name, VolumePath: volumePath, Path: subPath,
				PodDir: env.PodDir, ContainerName: container.Name, MountIndex: i,
			}); err != nil {
				m.log.Error(err, "Failed to prepare subPath", "container", container.Name, "volumeMount", vm.Name)
				// The details would tell the user about the host's files.
				return nil, fmt.Errorf("failed to prepare subPath for volumeMount %q of container %q", vm.Name, container.Name)
			}
		}
		propagation, err := mountPropagation(vm.MountPropagation)
		if err != nil {
			return nil, err
		}
		if vm.RecursiveReadOnly != nil && *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyEnabled {
			return nil, fmt.Errorf("recursive read-only mount %q of container %q is not supported yet", vm.Name, container.Name)
		}
		mounts = append(mounts, &runtimeapi.Mount{
			ContainerPath:  vm.MountPath,
			HostPath:       hostPath,
			Readonly:       vm.ReadOnly || readOnly[vm.Name],
			Propagation:    propagation,
			SelinuxRelabel: env.SELinuxRelabel[vm.Name],
		})
	}
	hosts, err := m.hostsMount(pod, container, env.podIPs, env.PodDir)
	if err != nil {
		return nil, err
	}
	if hosts != nil {
		mounts = append(mounts, hosts)
	}
	if mount := m.terminationMessageMount(container, restartCount, env.PodDir); mount != nil {
		mounts = append(mounts, mount)
	}
	// Every source as the runtime sees the host, decided in one place:
	// the volumes' folders and the pod's own files stay the host's paths
	// until here, where sub paths are walked and files written.
	for _, mount := range mounts {
		mount.HostPath = m.config.HostPaths.ForRuntime(mount.HostPath)
	}
	idmapMounts(mounts, env.userNamespace)
	return mounts, nil
}

// makeBlockDevices hands the runtime each of the container's
// volumeDevices: the link to the device in the pod's folder, which the
// runtime resolves, at its devicePath, read-only ("r") when the pod
// claims the volume read-only, else "mrw", as the kubelet.
func (m *Manager) makeBlockDevices(pod *corev1.Pod, container *corev1.Container, env *PodEnv) ([]*runtimeapi.Device, error) {
	readOnly := readOnlyVolumes(pod)
	var devices []*runtimeapi.Device
	for _, d := range container.VolumeDevices {
		path, ok := env.VolumePaths[d.Name]
		if !ok {
			return nil, fmt.Errorf("cannot find volume %q to pass into container %q", d.Name, container.Name)
		}
		permissions := "mrw"
		if readOnly[d.Name] {
			permissions = "r"
		}
		devices = append(devices, &runtimeapi.Device{
			ContainerPath: d.DevicePath,
			HostPath:      m.config.HostPaths.ForRuntime(path),
			Permissions:   permissions,
		})
	}
	return devices, nil
}

// readOnlyVolumes are the pod's volumes every container mounts read-only,
// as under the kubelet: those whose files nodelet writes from the API
// (configMap, secret, downwardAPI, projected), for their next update
// would undo any change, and the persistentVolumeClaim volumes the pod
// claims read-only.
func readOnlyVolumes(pod *corev1.Pod) map[string]bool {
	names := map[string]bool{}
	for _, vol := range pod.Spec.Volumes {
		if vol.ConfigMap != nil || vol.Secret != nil || vol.DownwardAPI != nil || vol.Projected != nil ||
			(vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ReadOnly) {
			names[vol.Name] = true
		}
	}
	return names
}

// terminationMessageMount makes the file the container may write its
// termination message to, one per container instance, and mounts it at
// terminationMessagePath. As in the kubelet, a file that cannot be made
// costs the container its message, not its start.
func (m *Manager) terminationMessageMount(container *corev1.Container, restartCount int, podDir string) *runtimeapi.Mount {
	if podDir == "" || container.TerminationMessagePath == "" {
		return nil
	}
	dir := filepath.Join(podDir, "containers", container.Name)
	path := filepath.Join(dir, strconv.Itoa(restartCount))
	if err := createTerminationMessageFile(dir, path); err != nil {
		m.log.Error(err, "Failed to create termination message file", "container", container.Name, "path", path)
		return nil
	}
	return &runtimeapi.Mount{ContainerPath: container.TerminationMessagePath, HostPath: path}
}

func createTerminationMessageFile(dir, path string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	// A file left by an earlier instance with the same restart count must
	// not carry its message over.
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Any user in the container may write its message; umask would
	// otherwise narrow the mode.
	return os.Chmod(path, 0o666)
}

// expandSubPathExpr expands a volume mount's subPathExpr; unlike in
// commands, a reference to a variable that is unset or empty is an error.
func expandSubPathExpr(expr string, values map[string]string) (string, error) {
	var missing []string
	expanded := expansion.Expand(expr, func(name string) string {
		value := values[name]
		if value == "" {
			missing = append(missing, name)
		}
		return value
	})
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(slices.Compact(missing), ", "))
	}
	return expanded, nil
}

// validateSubPath refuses sub paths that could leave the volume by their
// spelling alone.
func validateSubPath(subPath string) error {
	if filepath.IsAbs(subPath) {
		return fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(subPath), "/"), "..") {
		return fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
	}
	return nil
}

func mountPropagation(mode *corev1.MountPropagationMode) (runtimeapi.MountPropagation, error) {
	if mode == nil {
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	}
	switch *mode {
	case corev1.MountPropagationNone:
		return runtimeapi.MountPropagation_PROPAGATION_PRIVATE, nil
	case corev1.MountPropagationHostToContainer:
		return runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER, nil
	case corev1.MountPropagationBidirectional:
		return runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL, nil
	}
	return 0, fmt.Errorf("invalid MountPropagation mode: %q", *mode)
}

// ---- Security ----

// effectiveSecurityContext is the container's security context with the
// pod's user, group, non-root and SELinux settings filled in where the
// container leaves them unset.
func effectiveSecurityContext(pod *corev1.Pod, container *corev1.Container) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{}
	if container.SecurityContext != nil {
		sc = container.SecurityContext.DeepCopy()
	}
	psc := pod.Spec.SecurityContext
	if psc == nil {
		return sc
	}
	if sc.RunAsUser == nil {
		sc.RunAsUser = psc.RunAsUser
	}
	if sc.RunAsGroup == nil {
		sc.RunAsGroup = psc.RunAsGroup
	}
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = psc.RunAsNonRoot
	}
	if sc.SELinuxOptions == nil {
		sc.SELinuxOptions = psc.SELinuxOptions
	}
	return sc
}

// imageUser is the user an image runs as, as the runtime reports it: a
// numeric UID, or a user name it cannot resolve to one.
type imageUser struct {
	UID      *int64
	Username string
}

// verifyRunAsNonRoot refuses to start a container that must not run as root
// but would. user is nil when the image's user is not known. The messages
// are the kubelet's.
func verifyRunAsNonRoot(pod *corev1.Pod, container *corev1.Container, sc *corev1.SecurityContext, user *imageUser) error {
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		return nil
	}
	who := fmt.Sprintf("(pod: %q, container: %s)", fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID), container.Name)
	if sc.RunAsUser != nil {
		if *sc.RunAsUser == 0 {
			return fmt.Errorf("container's runAsUser breaks non-root policy %s", who)
		}
		return nil
	}
	switch {
	case user == nil:
		return fmt.Errorf("container has runAsNonRoot and the image's user is unknown, cannot verify user is non-root %s", who)
	case user.UID != nil && *user.UID == 0:
		return fmt.Errorf("container has runAsNonRoot and image will run as root %s", who)
	case user.UID == nil && user.Username != "":
		return fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root %s", user.Username, who)
	}
	return nil
}

// imageUser is the user of an image ensureImage has returned.
func (m *Manager) imageUser(imageRef string) *imageUser {
	if m.puller == nil {
		return nil
	}
	return m.puller.user(imageRef)
}

// seccompProfileRoot holds Localhost seccomp profiles. It is the kubelet's
// own folder, so that profiles installed for the kubelet (by hand or by the
// security-profiles-operator) serve nodelet's pods unchanged.
const seccompProfileRoot = "/var/lib/kubelet/seccomp"

func containerSecurityContext(pod *corev1.Pod, container *corev1.Container, sc *corev1.SecurityContext, userNs *runtimeapi.UserNamespace) (*runtimeapi.LinuxContainerSecurityContext, error) {
	out := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   namespaceOptions(pod, userNs),
		SelinuxOptions:     runtimeSELinuxOptions(sc.SELinuxOptions),
		SupplementalGroups: podSupplementalGroups(pod.Spec.SecurityContext),
	}
	if sc.Capabilities != nil {
		// Names go as written ("NET_ADMIN"): the runtime adds CAP_.
		out.Capabilities = &runtimeapi.Capability{}
		for _, c := range sc.Capabilities.Add {
			out.Capabilities.AddCapabilities = append(out.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range sc.Capabilities.Drop {
			out.Capabilities.DropCapabilities = append(out.Capabilities.DropCapabilities, string(c))
		}
	}
	if sc.Privileged != nil {
		out.Privileged = *sc.Privileged
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
	}
	if sc.ReadOnlyRootFilesystem != nil {
		out.ReadonlyRootfs = *sc.ReadOnlyRootFilesystem
	}
	if sc.AllowPrivilegeEscalation != nil {
		out.NoNewPrivs = !*sc.AllowPrivilegeEscalation
	}
	// Left empty, masked and read-only /proc paths are the runtime's
	// defaults; Unmasked asks for none.
	if sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
		out.MaskedPaths = []string{}
		out.ReadonlyPaths = []string{}
	}

	policy, err := supplementalGroupsPolicy(pod.Spec.SecurityContext)
	if err != nil {
		return nil, err
	}
	out.SupplementalGroupsPolicy = policy

	var podSeccomp *corev1.SeccompProfile
	if pod.Spec.SecurityContext != nil {
		podSeccomp = pod.Spec.SecurityContext.SeccompProfile
	}
	seccomp := podSeccomp
	if container.SecurityContext != nil && container.SecurityContext.SeccompProfile != nil {
		seccomp = container.SecurityContext.SeccompProfile
	}
	if out.Seccomp, err = seccompProfile(seccomp); err != nil {
		return nil, fmt.Errorf("seccomp profile of container %q: %w", container.Name, err)
	}
	if out.Apparmor, out.ApparmorProfile, err = appArmorProfile(pod, container); err != nil {
		return nil, fmt.Errorf("AppArmor profile of container %q: %w", container.Name, err)
	}
	return out, nil
}

// seccompProfile maps the API's profile to the runtime's. Unset means
// Unconfined, the kubelet's default without SeccompDefault.
func seccompProfile(p *corev1.SeccompProfile) (*runtimeapi.SecurityProfile, error) {
	if p == nil {
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
	}
	switch p.Type {
	case corev1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}, nil
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile == nil || *p.LocalhostProfile == "" {
			return nil, errors.New("localhostProfile must be set if seccompProfile type is Localhost")
		}
		return &runtimeapi.SecurityProfile{
			ProfileType:  runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: filepath.Join(seccompProfileRoot, *p.LocalhostProfile),
		}, nil
	}
	return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, nil
}

// appArmorProfile takes the container's profile, else the deprecated
// per-container pod annotation, else the pod's. It also returns the profile
// in the older string form that runtimes before the structured field read.
func appArmorProfile(pod *corev1.Pod, container *corev1.Container) (*runtimeapi.SecurityProfile, string, error) {
	var profile *corev1.AppArmorProfile
	switch {
	case container.SecurityContext != nil && container.SecurityContext.AppArmorProfile != nil:
		profile = container.SecurityContext.AppArmorProfile
	case pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+container.Name] != "":
		profile = appArmorFromAnnotation(pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+container.Name])
	case pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.AppArmorProfile != nil:
		profile = pod.Spec.SecurityContext.AppArmorProfile
	}
	if profile == nil {
		return nil, "", nil
	}
	switch profile.Type {
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			corev1.DeprecatedAppArmorBetaProfileRuntimeDefault, nil
	case corev1.AppArmorProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
			corev1.DeprecatedAppArmorBetaProfileNameUnconfined, nil
	case corev1.AppArmorProfileTypeLocalhost:
		if profile.LocalhostProfile == nil || *profile.LocalhostProfile == "" {
			return nil, "", errors.New("missing localhost apparmor profile name")
		}
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: *profile.LocalhostProfile},
			corev1.DeprecatedAppArmorBetaProfileNamePrefix + *profile.LocalhostProfile, nil
	}
	return nil, "", fmt.Errorf("unknown AppArmor profile type %q", profile.Type)
}

func appArmorFromAnnotation(value string) *corev1.AppArmorProfile {
	switch {
	case value == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	case value == corev1.DeprecatedAppArmorBetaProfileNameUnconfined:
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	case strings.HasPrefix(value, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
		name := strings.TrimPrefix(value, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: &name}
	}
	return nil
}
