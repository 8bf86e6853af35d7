// Tests of the hostPath type checks, against real files in t.TempDir()
// (and /dev/null for a character device). No root needed.
package volume

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func TestCheckHostPath(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	missing := filepath.Join(dir, "missing")

	tests := map[string]struct {
		path     string
		pathType corev1.HostPathType
		wantErr  string
		wantDir  bool
		wantFile bool
	}{
		"an unset type checks nothing":              {path: missing, pathType: corev1.HostPathUnset},
		"a folder is a Directory":                   {path: dir, pathType: corev1.HostPathDirectory},
		"a file is not a Directory":                 {path: file, pathType: corev1.HostPathDirectory, wantErr: "hostPath type check failed: " + file + " is not a directory"},
		"a missing path is not a Directory":         {path: missing, pathType: corev1.HostPathDirectory, wantErr: "hostPath type check failed: " + missing + " is not a directory"},
		"DirectoryOrCreate creates the folder":      {path: filepath.Join(dir, "new", "sub"), pathType: corev1.HostPathDirectoryOrCreate, wantDir: true},
		"DirectoryOrCreate still refuses a file":    {path: file, pathType: corev1.HostPathDirectoryOrCreate, wantErr: "hostPath type check failed: " + file + " is not a directory"},
		"a file is a File":                          {path: file, pathType: corev1.HostPathFile},
		"a folder is not a File":                    {path: dir, pathType: corev1.HostPathFile, wantErr: "hostPath type check failed: " + dir + " is not a file"},
		"FileOrCreate creates an empty file":        {path: filepath.Join(dir, "created"), pathType: corev1.HostPathFileOrCreate, wantFile: true},
		"a unix socket is a Socket":                 {path: socket, pathType: corev1.HostPathSocket},
		"a file is not a Socket":                    {path: file, pathType: corev1.HostPathSocket, wantErr: "hostPath type check failed: " + file + " is not a socket file"},
		"/dev/null is a CharDevice":                 {path: "/dev/null", pathType: corev1.HostPathCharDev},
		"/dev/null is not a BlockDevice":            {path: "/dev/null", pathType: corev1.HostPathBlockDev, wantErr: "hostPath type check failed: /dev/null is not a block device"},
		"a file is not a CharDevice":                {path: file, pathType: corev1.HostPathCharDev, wantErr: "hostPath type check failed: " + file + " is not a character device"},
		"an unknown type is an invalid volume type": {path: dir, pathType: "Pipe", wantErr: "Pipe is an invalid volume type"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkHostPath("", tc.path, &tc.pathType)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantDir || tc.wantFile {
				info, err := os.Stat(tc.path)
				if err != nil {
					t.Fatalf("not created: %v", err)
				}
				if tc.wantDir && !info.IsDir() || tc.wantFile && !info.Mode().IsRegular() {
					t.Errorf("created %v, want dir=%v file=%v", info.Mode(), tc.wantDir, tc.wantFile)
				}
			}
		})
	}

	if err := checkHostPath("", missing, nil); err != nil {
		t.Errorf("no type: %v", err)
	}
}

// TestCheckHostPathUnderHostRoot: a companion node sees the host's root at
// /host; the host's path is checked and made there, and named as the
// host's in the messages.
func TestCheckHostPathUnderHostRoot(t *testing.T) {
	hostRoot := t.TempDir()
	if err := os.MkdirAll(filepath.Join(hostRoot, "srv", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	directory, orCreate := corev1.HostPathDirectory, corev1.HostPathDirectoryOrCreate
	if err := checkHostPath(hostRoot, "/srv/data", &directory); err != nil {
		t.Errorf("/srv/data on the host: %v", err)
	}
	if err := checkHostPath(hostRoot, "/srv/missing", &directory); err == nil || err.Error() != "hostPath type check failed: /srv/missing is not a directory" {
		t.Errorf("/srv/missing on the host: error = %v, want the host's path named", err)
	}
	if err := checkHostPath(hostRoot, "/srv/new", &orCreate); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(hostRoot, "srv", "new")); err != nil || !info.IsDir() {
		t.Errorf("DirectoryOrCreate made nothing under the host root: %v", err)
	}
}

func TestSubPathOnHost(t *testing.T) {
	sp := kubecontainer.SubPath{VolumeName: "v", Path: "a/b", PodDir: "/var/lib/nodelet/pods/uid", ContainerName: "c"}
	tests := map[string]struct {
		hostRoot, volumePath, want string
	}{
		"a hostPath volume is walked under the host root": {hostRoot: "/host", volumePath: "/srv/data", want: "/host/srv/data"},
		"nodelet's own volume is the same path inside":    {hostRoot: "/host", volumePath: "/var/lib/nodelet/pods/uid/volumes/kubernetes.io~empty-dir/v", want: "/var/lib/nodelet/pods/uid/volumes/kubernetes.io~empty-dir/v"},
		"a folder beside the root dir is the host's":      {hostRoot: "/host", volumePath: "/var/lib/nodelet-other", want: "/host/var/lib/nodelet-other"},
		"no host root changes nothing":                    {hostRoot: "", volumePath: "/srv/data", want: "/srv/data"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sp := sp
			sp.VolumePath = tc.volumePath
			got := subPathOnHost(sp, tc.hostRoot, "/var/lib/nodelet")
			want := sp
			want.VolumePath = tc.want
			if got != want {
				t.Errorf("subPathOnHost() = %+v, want %+v", got, want)
			}
		})
	}
}
