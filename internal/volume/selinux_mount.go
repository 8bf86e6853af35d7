package volume

import (
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/selinux/go-selinux"
	"github.com/opencontainers/selinux/go-selinux/label"
	corev1 "k8s.io/api/core/v1"
)

// Mounting with the pod's SELinux label (-o context=...), as the kubelet
// of 1.36 does by default (SELinuxMountReadWriteOncePod and
// SELinuxChangePolicy on, SELinuxMount off): only a ReadWriteOncePod
// persistent volume, of a CSI driver whose CSIDriver says seLinuxMount,
// and only on a host with SELinux. Its files then carry the label
// without a walk, and the runtime is not asked to relabel them.

// SELinuxLabels translates a container's seLinuxOptions into the label
// of the files it may use, as the kubelet's SELinuxLabelTranslator.
type SELinuxLabels interface {
	FileLabel(opts *corev1.SELinuxOptions) (string, error)
}

// hostSELinuxLabels asks the host's SELinux policy (its container
// contexts) through go-selinux, as the kubelet.
type hostSELinuxLabels struct{}

func (hostSELinuxLabels) FileLabel(opts *corev1.SELinuxOptions) (string, error) {
	args := selinuxContextOptions(opts)
	if len(args) == 0 {
		return "", nil
	}
	process, file, err := label.InitLabels(args)
	if err != nil {
		return "", err
	}
	// Only the file label is wanted: the process label's MCS level is
	// not kept reserved.
	selinux.ReleaseLabel(process)
	return file, nil
}

// selinuxContextOptions are go-selinux's label options for opts.
func selinuxContextOptions(opts *corev1.SELinuxOptions) []string {
	if opts == nil {
		return nil
	}
	var args []string
	for _, o := range []struct{ key, value string }{{"user", opts.User}, {"role", opts.Role}, {"type", opts.Type}, {"level", opts.Level}} {
		if o.value != "" {
			args = append(args, o.key+":"+o.value)
		}
	}
	return args
}

// volumeSELinuxOptions are the effective seLinuxOptions of each
// container (init, regular and ephemeral) that mounts the volume, the
// container's own else the pod's, as the kubelet collects them.
func volumeSELinuxOptions(pod *corev1.Pod, volume string) []*corev1.SELinuxOptions {
	var options []*corev1.SELinuxOptions
	var podOptions *corev1.SELinuxOptions
	if pod.Spec.SecurityContext != nil {
		podOptions = pod.Spec.SecurityContext.SELinuxOptions
	}
	visit := func(sc *corev1.SecurityContext, mounts []corev1.VolumeMount) {
		opts := podOptions
		if sc != nil && sc.SELinuxOptions != nil {
			opts = sc.SELinuxOptions
		}
		for _, vm := range mounts {
			if opts != nil && vm.Name == volume {
				options = append(options, opts)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		visit(c.SecurityContext, c.VolumeMounts)
	}
	for _, c := range pod.Spec.Containers {
		visit(c.SecurityContext, c.VolumeMounts)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		visit(c.SecurityContext, c.VolumeMounts)
	}
	return options
}

// mountSELinuxLabel is the label a claim's volume pv is mounted with for
// the pod ("" for none), given whether its plugin mounts with a context
// (a CSI driver's seLinuxMount), as the kubelet's GetMountSELinuxLabel on
// a host with SELinux. Containers whose labels cannot be made, or differ,
// are an error for a ReadWriteOncePod volume only, in the kubelet's
// words; for others the kubelet counts a warning and goes on.
func mountSELinuxLabel(pod *corev1.Pod, volume string, pv *corev1.PersistentVolume, contextMount bool, labels SELinuxLabels) (string, error) {
	enforced := readWriteOncePod(pv)
	found := map[string]bool{}
	for _, opts := range volumeSELinuxOptions(pod, volume) {
		file, err := labels.FileLabel(opts)
		if err != nil {
			if !enforced {
				return "", nil
			}
			return "", fmt.Errorf("failed to construct SELinux label from context %q: %w", opts, err)
		}
		found[file] = true
	}
	if len(found) > 1 {
		if !enforced {
			return "", nil
		}
		all := make([]string, 0, len(found))
		for l := range found {
			all = append(all, l)
		}
		slices.Sort(all)
		return "", fmt.Errorf("multiple SELinux labels found: %s", strings.Join(all, ","))
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SELinuxChangePolicy != nil && *sc.SELinuxChangePolicy == corev1.SELinuxChangePolicyRecursive {
		return "", nil
	}
	if !contextMount || !enforced {
		return "", nil
	}
	for l := range found {
		return l, nil
	}
	return "", nil
}

// selinuxContextMountOption is the mount option that labels a file
// system's files (the kubelet's AddSELinuxMountOption).
func selinuxContextMountOption(label string) string {
	return fmt.Sprintf("context=%q", label)
}

// orHostSELinuxLabels is labels, else the host's.
func orHostSELinuxLabels(labels SELinuxLabels) SELinuxLabels {
	if labels == nil {
		return hostSELinuxLabels{}
	}
	return labels
}

// claimSELinuxLabel is mountSELinuxLabel on a host with SELinux; its
// error is the pod's claim error, and the pod waits.
func (m *Manager) claimSELinuxLabel(pod *corev1.Pod, volume string, pv *corev1.PersistentVolume, contextMount bool) (string, error) {
	if !m.selinux {
		return "", nil
	}
	label, err := mountSELinuxLabel(pod, volume, pv, contextMount, m.selinuxLabels)
	if err != nil {
		return "", &ClaimError{Volume: volume, Err: err}
	}
	return label, nil
}
