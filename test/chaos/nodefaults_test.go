package chaos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nodelet/nodelet/test/chaos/invariants"
	"github.com/nodelet/nodelet/test/chaos/nodefault"
	"github.com/nodelet/nodelet/test/chaos/schedule"
	"github.com/nodelet/nodelet/test/e2e"
)

// evictionThreshold is the run's hard nodefs.available threshold: a disk
// filled leaves less than that, so nodelet is under DiskPressure and
// evicts, as the kubelet would.
const evictionThreshold = 512 << 20

// evictionArgs are the flags the run adds to the stack's nodelet's: the
// stack's own thresholds leave the disk alone (it shares the host's), and
// the pressure lasts only 10 s after the disk is freed, so that the churn
// goes on.
func evictionArgs() []string {
	return []string{
		fmt.Sprintf("--eviction-hard=memory.available<100Mi,nodefs.available<%d", evictionThreshold),
		"--eviction-pressure-transition-period=10s",
	}
}

// wrappedPlugins are the CNI plugins of the stack's network that fail or
// hang: bridge (its interface and IPAM) and portmap (host ports).
var wrappedPlugins = []string{"bridge", "portmap"}

// wrapCNI wraps the plugins in the runtime's CNI bin folder, which must be
// the profile's own folder of links (the stack brought up with
// CNI_BIN_LINKS=true), never the shared one.
func wrapCNI(env e2e.Env) (*nodefault.CNIWrapper, error) {
	w, err := nodefault.WrapCNI(env.CNIBinDir, filepath.Join(env.StateDir, "run", "chaos-cni-fault"), wrappedPlugins...)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w (bring the stack up with CNI_BIN_LINKS=true, as hack/test.sh chaos does)", err), w.Restore())
	}
	return w, nil
}

// nodeDiskFile is where the disk fault's file goes: the node's own file
// system (the stack's NODE_DISK_SIZE), which holds nodelet's root dir and
// containerd's root. The run refuses to fill any other, the host's.
func nodeDiskFile(env e2e.Env) (string, error) {
	dir := filepath.Join(env.StateDir, "node-disk")
	own, err := nodefault.SameFileSystem(dir, env.StateDir)
	if err != nil {
		return "", err
	}
	holdsRoot, err := nodefault.SameFileSystem(dir, env.NodeletRootDir)
	if err != nil {
		return "", err
	}
	if own || !holdsRoot {
		return "", fmt.Errorf("nodelet's root dir %s is not on a file system of the node's own at %s: bring the stack up with NODE_DISK_SIZE", env.NodeletRootDir, dir)
	}
	return filepath.Join(dir, "chaos-fill"), nil
}

// failCNI makes the wrapped plugins fail (or hang, then fail) for hold
// in all: ADD always, DEL and CHECK sometimes, so that sandboxes fail to
// start and to stop. A hang, when there is one, is 2 s or more in whole
// seconds (the wrapper sleeps that long) and leaves the plugins failing
// at once for 5 s or more.
func (in *injector) failCNI(hold time.Duration) error {
	const minFailing, minHang = 5 * time.Second, 2 * time.Second
	fault := nodefault.CNIFault{Commands: []string{"ADD"}}
	if in.rng.IntN(2) == 0 {
		fault.Commands = append(fault.Commands, "DEL", "CHECK")
	}
	if maxHang := (hold - minFailing).Truncate(time.Second); maxHang >= minHang && in.rng.IntN(2) == 0 {
		fault.Hang = minHang + time.Duration(in.rng.Int64N(int64((maxHang-minHang)/time.Second)+1))*time.Second
	}
	// A call that began hanging just before the plugins are set right is
	// over only once it has failed: hold covers it.
	on := hold - fault.Hang
	in.rec.mark(invariants.Fault, fmt.Sprintf("%s for %s: %s", schedule.CNIFailing, on, fault))
	if err := in.cni.Set(fault); err != nil {
		return err
	}
	time.Sleep(on)
	if err := in.cni.Clear(); err != nil {
		return err
	}
	time.Sleep(fault.Hang)
	return nil
}

// fillDisk fills the node's file system to leave 32 to 448 MiB, under
// the eviction threshold, for hold, then frees it.
func (in *injector) fillDisk(hold time.Duration) error {
	available, err := nodefault.Available(filepath.Dir(in.diskFile))
	if err != nil {
		return err
	}
	leave := int64(32+in.rng.IntN(417)) << 20
	size := nodefault.FillSize(available, leave)
	in.rec.mark(invariants.Fault, fmt.Sprintf("%s for %s: %d MiB written, %d MiB left", schedule.DiskFilled, hold, size>>20, leave>>20))
	fillErr := nodefault.Fill(in.diskFile, size)
	if fillErr == nil {
		time.Sleep(hold)
	}
	return errors.Join(fillErr, freeDisk(in.diskFile))
}

func freeDisk(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("freeing the node's disk: %w", err)
	}
	return nil
}
