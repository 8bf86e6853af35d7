//go:build linux

package volume

import (
	"context"
	"testing"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A local volume's mount options are its bind mount's flags (a folder in
// t.TempDir(), bind-mounted for real, as root), as the statfs of the
// pod's folder for it shows.
func TestSetUpPodMountsALocalClaimWithItsMountOptions(t *testing.T) {
	requireRoot(t)
	e := claimEnv(t, t.TempDir())
	pv, err := e.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.MountOptions = []string{"noexec", "nosuid", "ro", "rw"}
	if _, err := e.client.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	paths, _ := setUp(t, e, claimVolumePod(false))
	var st unix.Statfs_t
	if err := unix.Statfs(paths["data"], &st); err != nil {
		t.Fatal(err)
	}
	if st.Flags&unix.ST_NOEXEC == 0 || st.Flags&unix.ST_NOSUID == 0 {
		t.Errorf("mount flags %#x, want noexec and nosuid", st.Flags)
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		t.Errorf("mount flags %#x: read-only, though rw came after ro", st.Flags)
	}
}
