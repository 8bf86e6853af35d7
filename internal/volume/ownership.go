package volume

import (
	"io/fs"

	corev1 "k8s.io/api/core/v1"
)

// What a pod's fsGroup asks of its volumes, as the kubelet's
// SetVolumeOwnership does it: every file and folder of a writable volume
// gets the fsGroup as its group, group read and write (read only on a
// read-only volume), and folders get group search and setgid, so that
// what the pod's processes create there later belongs to the fsGroup too.
// Decisions only; the walk that applies them is in ownership_linux.go.

// The permission bits fsGroup adds, as the kubelet's.
const (
	groupReadWrite fs.FileMode = 0o660
	groupRead      fs.FileMode = 0o440
	groupSearch    fs.FileMode = 0o110
)

// ownership is what fsGroup asks of one volume.
type ownership struct {
	// fsGroup is the group every file and folder gets.
	fsGroup int64
	// readOnly gives read access only: the volumes nodelet writes from
	// the API (their files are not the pod's to change) and read-only
	// claims.
	readOnly bool
	// onRootMismatch skips the walk when the volume's root folder already
	// has the group and the modes: fsGroupChangePolicy OnRootMismatch.
	onRootMismatch bool
}

// volumeOwnership is what the pod's fsGroup asks of vol, nil when nothing:
// no fsGroup, or a volume whose ownership is not the kubelet's to change
// (hostPath: the node's own files).
//
// An emptyDir is walked when it is made, as the kubelet walks it once, on
// its first set-up; nodelet keeps no ready file, so it tells a volume
// already walked by its root, which the walk changes last: the walk runs
// again only when one was cut short (a crash) or the root was changed
// since. Volumes written from the API are walked after each write (the
// write makes new files) whatever the policy, as the kubelet's.
func volumeOwnership(psc *corev1.PodSecurityContext, vol *corev1.Volume) *ownership {
	if psc == nil || psc.FSGroup == nil {
		return nil
	}
	switch {
	case vol.EmptyDir != nil:
		return &ownership{fsGroup: *psc.FSGroup, onRootMismatch: true}
	case vol.ConfigMap != nil, vol.Secret != nil, vol.DownwardAPI != nil, vol.Projected != nil:
		return &ownership{fsGroup: *psc.FSGroup, readOnly: true}
	}
	return nil
}

// claimOwnership is what the pod's fsGroup asks of a persistent volume it
// mounts: nothing on a read-only mount (the kubelet's local volumes) or
// for a volume type whose files are the node's (hostPath), else a walk
// that honours the pod's fsGroupChangePolicy.
func claimOwnership(psc *corev1.PodSecurityContext, readOnly, ownable bool) *ownership {
	if psc == nil || psc.FSGroup == nil || readOnly || !ownable {
		return nil
	}
	onRootMismatch := psc.FSGroupChangePolicy != nil && *psc.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch
	return &ownership{fsGroup: *psc.FSGroup, onRootMismatch: onRootMismatch}
}

// ownedMode is the mode the walk gives a file or folder of mode: the
// group bits added to what it has, never removed. Links keep theirs (a
// chmod would change their target).
func ownedMode(mode fs.FileMode, readOnly bool) fs.FileMode {
	if mode&fs.ModeSymlink != 0 {
		return mode
	}
	add := groupReadWrite
	if readOnly {
		add = groupRead
	}
	if mode.IsDir() {
		add |= groupSearch | fs.ModeSetgid
	}
	return mode | add
}

// ownedPayload is the payload of a volume written from the API with the
// modes the fsGroup walk would give its files, so that the files are
// written with them and compare equal to them at the next resync.
func ownedPayload(payload map[string]fileProjection, readOnly bool) map[string]fileProjection {
	owned := make(map[string]fileProjection, len(payload))
	for path, file := range payload {
		file.Mode = int32(ownedMode(fileMode(file.Mode), readOnly).Perm())
		owned[path] = file
	}
	return owned
}

// rootMatches reports whether a volume's root, of group gid and mode,
// already is as the walk leaves it, so OnRootMismatch may skip the walk:
// the fsGroup, a folder with at least the group bits, and setgid. A root
// that is not a folder never matches.
func rootMatches(gid int64, mode fs.FileMode, o ownership) bool {
	if gid != o.fsGroup || !mode.IsDir() {
		return false
	}
	want := ownedMode(mode&^(fs.ModePerm|fs.ModeSetgid), o.readOnly)
	return mode&want == want
}

// fsUser is the user that owns the service account tokens of a projected
// volume, as the kubelet's FsUserFrom chooses it: the one user every
// container of the pod runs as (its own runAsUser, else the pod's), nil
// when a container does not say or two differ. The token is then made
// readable by that user only (mode 0600), or by it and the fsGroup.
func fsUser(pod *corev1.Pod) *int64 {
	var user *int64
	same := true
	visit := func(sc *corev1.SecurityContext) {
		runAsUser := pod.Spec.SecurityContext.RunAsUser
		if sc != nil && sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		switch {
		case runAsUser == nil:
			same = false
		case user == nil:
			user = runAsUser
		case *user != *runAsUser:
			same = false
		}
	}
	if pod.Spec.SecurityContext == nil {
		pod = pod.DeepCopy()
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range pod.Spec.InitContainers {
		visit(pod.Spec.InitContainers[i].SecurityContext)
	}
	for i := range pod.Spec.Containers {
		visit(pod.Spec.Containers[i].SecurityContext)
	}
	for i := range pod.Spec.EphemeralContainers {
		visit(pod.Spec.EphemeralContainers[i].SecurityContext)
	}
	if !same {
		return nil
	}
	return user
}

// tokenMode is the mode of a projected service account token: the
// volume's default mode, or 0600 when the token has an owner or a group
// to be read by (fsGroup then adds group read: 0640).
func tokenMode(defaultMode int32, user, fsGroup *int64) int32 {
	if user != nil || fsGroup != nil {
		return 0o600
	}
	return defaultMode
}
