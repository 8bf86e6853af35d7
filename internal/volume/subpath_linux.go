//go:build linux

package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// maxSubPathResolutions bounds how often symlinks met on the way are
// resolved again: a container swapping links back and forth cannot keep
// the walk going for ever.
const maxSubPathResolutions = 16

// PrepareSubPath makes a volume's sub path ready for the runtime and
// returns the path to hand it: a bind mount of the sub path under the
// pod's folder, made from a file descriptor that was opened one path
// component at a time without following symlinks, from the volume's root
// down. A container may swap a folder of its volume for a symlink at any
// moment; a path checked and then handed on could by then lead anywhere
// on the node, while the descriptor stays on what was checked. Missing
// folders are made on the way, with the volume's mode (so that an
// fsGroup's access carries down). Symlinks that stay inside the volume are
// followed, as the kubelet follows them; one that leads out is refused.
// The mount goes when the pod's folder is torn down (TearDownPod).
func PrepareSubPath(sp kubecontainer.SubPath) (string, error) {
	if !filepath.IsAbs(sp.PodDir) {
		return "", fmt.Errorf("subPath %q of volume %s: no pod folder to bind it under", sp.Path, sp.VolumePath)
	}
	root, err := filepath.EvalSymlinks(sp.VolumePath)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(root)
	if err != nil {
		return "", err
	}
	mode := info.Mode() & (os.ModePerm | os.ModeSetgid)

	rel := filepath.Clean(sp.Path)
	for range maxSubPathResolutions {
		fd, err := openWithin(root, rel, mode)
		var link *symlinkError
		if errors.As(err, &link) {
			// Resolve the link as the node sees it, then walk again.
			resolved, err := filepath.EvalSymlinks(filepath.Join(root, link.path))
			if err != nil {
				return "", err
			}
			if !within(root, resolved) {
				return "", fmt.Errorf("subPath %q leads out of volume %s", sp.Path, sp.VolumePath)
			}
			if rel, err = filepath.Rel(root, filepath.Join(resolved, link.rest)); err != nil {
				return "", err
			}
			continue
		}
		if err != nil {
			return "", err
		}
		target, err := bindSubPath(fd, subPathTarget(sp))
		unix.Close(fd)
		return target, err
	}
	return "", fmt.Errorf("subPath %q of volume %s: too many symlinks", sp.Path, sp.VolumePath)
}

// symlinkError says openWithin met a symlink at path (relative to the
// root), with rest still to walk below it.
type symlinkError struct {
	path, rest string
}

func (e *symlinkError) Error() string { return fmt.Sprintf("%s is a symlink", e.path) }

// openWithin opens rel below root one component at a time, never
// following a symlink (O_NOFOLLOW; a symlink met is returned as a
// *symlinkError), making missing folders with mode. The descriptor is an
// O_PATH one: enough to bind-mount and to stat, no access to the content.
func openWithin(root, rel string, mode os.FileMode) (int, error) {
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	var parts []string
	if rel != "." {
		parts = strings.Split(rel, string(filepath.Separator))
	}
	for i, part := range parts {
		if part == "" || part == "." || part == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("invalid path component %q in %q", part, rel)
		}
		child, err := unix.Openat(fd, part, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			child, err = mkdirAt(fd, part, mode)
		}
		unix.Close(fd)
		if err != nil {
			return -1, &os.PathError{Op: "openat", Path: filepath.Join(root, filepath.Join(parts[:i+1]...)), Err: err}
		}
		fd = child
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, err
		}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			unix.Close(fd)
			return -1, &symlinkError{path: filepath.Join(parts[:i+1]...), rest: filepath.Join(parts[i+1:]...)}
		case i < len(parts)-1 && st.Mode&unix.S_IFMT != unix.S_IFDIR:
			unix.Close(fd)
			return -1, &os.PathError{Op: "openat", Path: filepath.Join(root, filepath.Join(parts[:i+1]...)), Err: unix.ENOTDIR}
		}
	}
	return fd, nil
}

// mkdirAt makes folder name in the folder dirFD and opens it, without
// following a symlink someone put there meanwhile; its mode is set
// exactly, whatever the umask.
func mkdirAt(dirFD int, name string, mode os.FileMode) (int, error) {
	if err := unix.Mkdirat(dirFD, name, uint32(mode.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	fd, err := unix.Openat(dirFD, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	// chmod through the descriptor's /proc link reaches the folder opened,
	// never what a name might point to by now.
	perm := uint32(mode.Perm())
	if mode&os.ModeSetgid != 0 {
		perm |= unix.S_ISGID
	}
	if err := unix.Chmod(procFD(fd), perm); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func procFD(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

// bindSubPath bind-mounts what fd is open on at target, making target a
// file or a folder to match. A target already bound to that same file (a
// container started again) is kept; one bound to something else is
// unmounted first.
func bindSubPath(fd int, target string) (string, error) {
	var want unix.Stat_t
	if err := unix.Fstat(fd, &want); err != nil {
		return "", err
	}
	isDir := want.Mode&unix.S_IFMT == unix.S_IFDIR
	var have unix.Stat_t
	err := unix.Stat(target, &have)
	switch {
	case err == nil && have.Dev == want.Dev && have.Ino == want.Ino:
		return target, nil
	case err == nil:
		if err := unmount(target); err != nil {
			return "", err
		}
		if (have.Mode&unix.S_IFMT == unix.S_IFDIR) != isDir {
			if err := os.Remove(target); err != nil {
				return "", err
			}
		}
	case !errors.Is(err, unix.ENOENT):
		return "", &os.PathError{Op: "stat", Path: target, Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return "", err
	}
	if isDir {
		if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
	} else {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o640)
		if err != nil {
			return "", err
		}
		f.Close()
	}
	if err := unix.Mount(procFD(fd), target, "", unix.MS_BIND, ""); err != nil {
		return "", &os.PathError{Op: "bind mount", Path: target, Err: err}
	}
	return target, nil
}
