package logs

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

const (
	// rotatedTimeFormat is the suffix of a rotated log file (UTC), as the
	// kubelet names them: 0.log.20260102-150405.
	rotatedTimeFormat = "20060102-150405"
	compressedSuffix  = ".gz"
	tmpSuffix         = ".tmp"
)

// RotationOptions bound the log of every running container.
type RotationOptions struct {
	// MaxSize is the size at which a container's log file is rotated; zero
	// or less turns rotation off (the kubelet's containerLogMaxSize).
	MaxSize int64
	// MaxFiles is how many files one container's log may span, the one
	// being written included; at least 2 (containerLogMaxFiles).
	MaxFiles int
	// Interval is how often the logs are looked at
	// (containerLogMonitorInterval).
	Interval time.Duration
}

// Validate checks the options of an enabled rotation.
func (o RotationOptions) Validate() error {
	switch {
	case o.MaxSize <= 0:
		return nil
	case o.MaxFiles < 2:
		return fmt.Errorf("container log max files must be at least 2, not %d", o.MaxFiles)
	case o.Interval <= 0:
		return fmt.Errorf("container log monitor interval must be positive, not %s", o.Interval)
	}
	return nil
}

// RotationRuntime is what the Rotator asks of the container runtime.
type RotationRuntime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Rotator rotates the log files of running containers by size, as the
// kubelet's container log manager: the full file is renamed with a
// timestamp suffix, the runtime is told to reopen the log (CRI
// ReopenContainerLog) and so starts a new file, older files are
// compressed, and the oldest go beyond MaxFiles.
type Rotator struct {
	runtime RotationRuntime
	opts    RotationOptions
	clock   clock.WithTicker
	log     logr.Logger

	// mu serialises rounds.
	mu sync.Mutex
	// logPaths holds the log path of each running container seen in the
	// last round. A container's log path is fixed when it is created, so
	// the runtime is asked once per container, not every round: with a
	// hundred containers that is ten calls a second less.
	logPaths map[string]string
}

// NewRotator returns a Rotator; it does nothing until started.
func NewRotator(runtime RotationRuntime, opts RotationOptions, clk clock.WithTicker, log logr.Logger) *Rotator {
	return &Rotator{runtime: runtime, opts: opts, clock: clk, log: log, logPaths: map[string]string{}}
}

// NeedLeaderElection is false: every node rotates its own logs.
func (r *Rotator) NeedLeaderElection() bool { return false }

// Start rotates logs every Interval until ctx ends.
func (r *Rotator) Start(ctx context.Context) error {
	if r.opts.MaxSize <= 0 {
		return nil
	}
	r.log.Info("Starting container log rotation", "maxSize", r.opts.MaxSize, "maxFiles", r.opts.MaxFiles, "interval", r.opts.Interval)
	ticker := r.clock.NewTicker(r.opts.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := r.RotateAll(ctx); err != nil {
				r.log.Error(err, "Failed to rotate container logs")
			}
		}
	}
}

// RotateAll rotates the log of every running container whose file reached
// MaxSize. One container's failure does not stop the others'.
func (r *Rotator) RotateAll(ctx context.Context) error {
	containers, err := r.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return fmt.Errorf("listing running containers: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	seen := make(map[string]string, len(containers))
	for _, c := range containers {
		path, known := r.logPaths[c.Id]
		if !known {
			if path, err = r.logPath(ctx, c.Id); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		seen[c.Id] = path
		if path == "" {
			continue
		}
		if err := r.rotateIfFull(ctx, c.Id, path); err != nil {
			errs = append(errs, err)
		}
	}
	r.logPaths = seen
	return errors.Join(errs...)
}

// logPath asks the runtime for a container's log path: "" when it has
// none or stopped since it was listed.
func (r *Rotator) logPath(ctx context.Context, id string) (string, error) {
	resp, err := r.runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", fmt.Errorf("getting status of container %s: %w", id, err)
	}
	if resp.GetStatus().GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return "", nil
	}
	return resp.GetStatus().GetLogPath(), nil
}

func (r *Rotator) rotateIfFull(ctx context.Context, id, path string) error {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		// Lost (a failed rotation, someone's rm): have the runtime make it
		// again, or the container's output goes nowhere.
		if err := r.runtime.ReopenContainerLog(ctx, id); err != nil {
			return fmt.Errorf("reopening the missing log %s of container %s: %w", path, id, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking at the log of container %s: %w", id, err)
	}
	if info.Size() < r.opts.MaxSize {
		return nil
	}
	if err := r.rotate(ctx, id, path); err != nil {
		return fmt.Errorf("rotating the log %s of container %s: %w", path, id, err)
	}
	r.log.V(1).Info("Rotated container log", "containerID", id, "path", path, "size", info.Size())
	return nil
}

// rotate makes room among the rotated files, then moves the live file
// aside and has the runtime open a new one.
func (r *Rotator) rotate(ctx context.Context, id, path string) error {
	rotated := path + "." + r.clock.Now().UTC().Format(rotatedTimeFormat)
	// Two rotations within one second would give two files one name:
	// wait for the next round.
	for _, name := range []string{rotated, rotated + compressedSuffix} {
		if _, err := os.Lstat(name); err == nil {
			return nil
		}
	}

	existing, err := filepath.Glob(path + ".*")
	if err != nil {
		return err
	}
	plan := planRotation(existing, r.opts.MaxFiles)
	for _, name := range plan.Remove {
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	for _, name := range plan.Compress {
		if err := compress(name); err != nil {
			return err
		}
	}

	if err := os.Rename(path, rotated); err != nil {
		return err
	}
	if err := r.runtime.ReopenContainerLog(ctx, id); err != nil {
		// Put the file back, to be rotated next round; the runtime still
		// writes to it.
		if renameErr := os.Rename(rotated, path); renameErr != nil {
			r.log.Error(renameErr, "Failed to put back a container log whose rotation failed", "containerID", id, "path", path)
		}
		return fmt.Errorf("reopening the log: %w", err)
	}
	return nil
}

// rotationPlan is what to do with a container's rotated files before the
// live one joins them.
type rotationPlan struct {
	// Remove: leftovers of an interrupted compression, and the oldest
	// files beyond the limit.
	Remove []string
	// Compress: the files kept that are not compressed yet.
	Compress []string
}

// planRotation decides, from the names of a container's rotated files
// (<log>.<time>, <log>.<time>.gz, <log>.<time>.gz.tmp), which to remove and
// which to compress so that, with the live file and the one about to be
// rotated, at most maxFiles remain. The oldest go first, so that a
// `kubectl logs` reading the newest is not disturbed.
func planRotation(rotated []string, maxFiles int) rotationPlan {
	var plan rotationPlan
	names := map[string]bool{}
	for _, name := range rotated {
		names[name] = true
	}
	var kept []string
	for _, name := range rotated {
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			// A compression that did not finish.
			plan.Remove = append(plan.Remove, name)
		case !strings.HasSuffix(name, compressedSuffix) && names[name+compressedSuffix]:
			// Compressed, but not yet removed.
			plan.Remove = append(plan.Remove, name)
		default:
			kept = append(kept, name)
		}
	}
	// The timestamp suffix makes the names sort oldest first.
	sort.Strings(kept)
	excess := max(len(kept)-max(maxFiles-2, 0), 0)
	plan.Remove = append(plan.Remove, kept[:excess]...)
	for _, name := range kept[excess:] {
		if !strings.HasSuffix(name, compressedSuffix) {
			plan.Compress = append(plan.Compress, name)
		}
	}
	sort.Strings(plan.Remove)
	return plan
}

// compress gzips a rotated file into name.gz, then removes it.
func compress(name string) error {
	in, err := os.Open(name)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := name + compressedSuffix + tmpSuffix
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	err = errors.Join(err, zw.Close(), out.Close())
	if err != nil {
		return fmt.Errorf("compressing %s: %w", name, err)
	}
	if err := os.Rename(tmp, name+compressedSuffix); err != nil {
		return err
	}
	return os.Remove(name)
}
