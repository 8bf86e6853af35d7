package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Nodelet runs the nodelet binary as a child process, so that tests can
// kill it at any instant and start it again. Its output is appended to one
// log file across restarts.
type Nodelet struct {
	bin        string
	args       []string
	logPath    string
	healthAddr string

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error
	stopping bool
	// extraArgs are added to args at the next Start (SetExtraArgs).
	extraArgs []string
	// inNode, when set, starts nodelet in the namespaces of the node's
	// systemd (the systemd cgroup driver's stack): nsenter, which forks
	// nodelet there, is the child process, and signals go to nodelet.
	inNode []string
}

// NewNodelet prepares nodelet with the flags the stack's scripts start it
// with (its args file), at debug level: a failed test needs each
// reconcile's decisions in the log.
func NewNodelet(bin string, env Env) (*Nodelet, error) {
	data, err := os.ReadFile(env.NodeletArgsFile)
	if err != nil {
		return nil, fmt.Errorf("reading nodelet's flags: %w", err)
	}
	args := strings.Fields(string(data))
	args = append(args, "--zap-log-level=debug",
		// A 100 MB log must stay one file for `kubectl logs` to show it
		// whole; the rotation test sets its own limits.
		"--container-log-max-size=200Mi",
		// Volumes measured at most every 10 s, not every minute: the
		// volume stats test waits for a write to show.
		"--volume-stats-agg-period=10s")
	n := &Nodelet{bin: bin, args: args, logPath: env.NodeletLog, healthAddr: env.NodeletHealthAddr}
	if env.SystemdPID != "" {
		// setpriv: nodelet dies with nsenter, as with the test binary.
		n.inNode = []string{"nsenter", "--target", env.SystemdPID, "--mount", "--pid", "--cgroup", "--", "setpriv", "--pdeathsig", "KILL", "--"}
	}
	return n, nil
}

// BuildNodelet builds nodelet from the repository holding this package
// into dir and returns the binary's path.
func BuildNodelet(dir string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "nodelet")
	// The agent network mode's CNI shim goes beside it, where nodelet
	// looks for it.
	for _, build := range [][]string{{"-o", bin, "."}, {"-o", filepath.Join(dir, "nodelet-cni"), "./cmd/nodelet-cni"}} {
		cmd := goBuild(root, build...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building nodelet in %s: %w\n%s", root, err, out)
		}
	}
	return bin, nil
}

// goBuild is a go build in dir static and -trimpath, as hack/lib.sh's
// build_nodelet and the suite's own test binary are built: with the same
// flags they share their compiled packages.
func goBuild(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", append([]string{"build", "-trimpath"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}

// repoRoot is the nearest folder above the working directory (the
// package's folder under go test) that holds go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Start starts nodelet in the background.
func (n *Nodelet) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && !n.hasExited() {
		return errors.New("nodelet is already running")
	}
	if err := os.MkdirAll(filepath.Dir(n.logPath), 0o755); err != nil {
		return fmt.Errorf("creating nodelet's log folder: %w", err)
	}
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening nodelet's log: %w", err)
	}
	fmt.Fprintf(logFile, "===== e2e: starting %s at %s\n", n.bin, time.Now().Format(time.RFC3339Nano))

	argv := append(append(append(append([]string{}, n.inNode...), n.bin), n.args...), n.extraArgs...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// nodelet must not outlive a test binary that died (a timeout panic
	// skips every cleanup).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting nodelet: %w", err)
	}
	exited := make(chan struct{})
	n.cmd, n.exited, n.exitErr, n.stopping = cmd, exited, nil, false
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logFile, "===== e2e: nodelet (pid %d) exited at %s: %v\n", cmd.Process.Pid, time.Now().Format(time.RFC3339Nano), err)
		logFile.Close()
		n.mu.Lock()
		n.exitErr = err
		n.mu.Unlock()
		close(exited)
	}()
	return nil
}

func (n *Nodelet) hasExited() bool {
	select {
	case <-n.exited:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL, as a crash or an OOM kill would, and waits for the
// process to be gone.
func (n *Nodelet) Kill() error {
	return n.signalAndWait(syscall.SIGKILL, time.Minute)
}

// Stop asks nodelet to shut down with SIGTERM and kills it if it has not
// within timeout.
func (n *Nodelet) Stop(timeout time.Duration) error {
	if err := n.signalAndWait(syscall.SIGTERM, timeout); err != nil {
		// A shutdown that hangs is a bug: SIGQUIT has the Go runtime
		// write every goroutine's stack into the log, to show where.
		if quitErr := n.signalAndWait(syscall.SIGQUIT, 10*time.Second); quitErr != nil {
			err = errors.Join(err, n.Kill())
		}
		return fmt.Errorf("%w; the end of its log, with its goroutines:\n%s", err, n.LogLines("", 300))
	}
	return nil
}

func (n *Nodelet) signalAndWait(sig syscall.Signal, timeout time.Duration) error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.stopping = true
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := n.signal(cmd, sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sending %v to nodelet: %w", sig, err)
	}
	select {
	case <-exited:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("nodelet did not exit within %s of %v", timeout, sig)
	}
}

// Stopped tells whether nodelet was started and has exited since, asked
// to or not.
func (n *Nodelet) Stopped() bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil && n.hasExited()
}

// UnexpectedExit tells whether nodelet has exited without being asked to,
// and how.
func (n *Nodelet) UnexpectedExit() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.stopping || !n.hasExited() {
		return nil
	}
	return fmt.Errorf("pid %d: %w", n.cmd.Process.Pid, n.exitErr)
}

// SetExtraArgs sets flags that the next Start adds to the stack's (later
// flags win); nil goes back to the stack's alone.
func (n *Nodelet) SetExtraArgs(args []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.extraArgs = args
}

// PID is the running nodelet's process ID, 0 when none runs.
func (n *Nodelet) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.hasExited() {
		return 0
	}
	return n.pid(n.cmd)
}

// pid is nodelet's process ID: the started process's, or, started in the
// node's namespaces, its child's (0 until nsenter has forked it).
func (n *Nodelet) pid(cmd *exec.Cmd) int {
	if len(n.inNode) == 0 {
		return cmd.Process.Pid
	}
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(children))
	if len(fields) == 0 {
		return 0
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return pid
}

// signal sends sig to nodelet; to nsenter when it has no child yet
// (nodelet, forked later, then dies with it).
func (n *Nodelet) signal(cmd *exec.Cmd, sig syscall.Signal) error {
	if pid := n.pid(cmd); pid > 0 && pid != cmd.Process.Pid {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return nil
	}
	return cmd.Process.Signal(sig)
}

// Healthy tells whether nodelet's health endpoint answers, for waits.
func (n *Nodelet) Healthy(ctx context.Context) bool {
	return httpOK(ctx, "http://"+n.healthAddr+"/healthz")
}

// LogLines returns the last max lines of nodelet's log that contain
// substr (every line when substr is empty).
func (n *Nodelet) LogLines(substr string, max int) string {
	if n == nil {
		return ""
	}
	data, err := readTail(n.logPath, 64<<20)
	if err != nil {
		return fmt.Sprintf("(reading nodelet's log: %v)", err)
	}
	var lines []string
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && strings.Contains(line, substr) {
			lines = append(lines, line)
		}
	}
	if len(lines) > max {
		lines = lines[len(lines)-max:]
	}
	return strings.Join(lines, "\n")
}

// readTail reads at most the last limit bytes of a file, from a line start.
func readTail(path string, limit int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		return nil, err
	}
	offset := max(info.Size()-limit, 0)
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(file)
	if err != nil {
		return nil, err
	}
	if offset > 0 {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return data, nil
}
