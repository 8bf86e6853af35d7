package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	cri "k8s.io/cri-api/pkg/apis"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/test/chaos/criproxy"
	"github.com/nodelet/nodelet/test/chaos/invariants"
	"github.com/nodelet/nodelet/test/chaos/nodefault"
	"github.com/nodelet/nodelet/test/chaos/schedule"
	"github.com/nodelet/nodelet/test/e2e"
)

// injector injects one fault at a time, as its plan says, into the stack
// nodelet runs on, and records each in the trace.
type injector struct {
	env     e2e.Env
	nodelet *e2e.Nodelet
	proxy   *criproxy.Proxy
	cni     *nodefault.CNIWrapper
	// diskFile is the disk fault's file, on the node's own file system.
	diskFile string
	runtime  cri.RuntimeService
	rec      *recorder
	// rng draws what the plan leaves open: which CRI calls fail, which
	// CNI commands, how much disk is left.
	rng    *rand.Rand
	plan   schedule.Schedule
	counts map[string]int
	// stopped is when the last fault was undone.
	stopped time.Time
}

// run injects the plan's faults. The first round is injected whole, past
// the deadline if the stack is slower than planned: a kind left out
// would go untested. A later fault is injected only if it is over
// before the deadline at the latest. Each fault is undone before the
// next (nodelet started again, the runtime up, the API server going
// again, the proxy's faults off), so that when run returns nothing is
// failing any more: it returns as soon as the last fault is undone, and
// records that moment (FaultsStopped) and it.
func (in *injector) run(ctx context.Context, until time.Time) error {
	defer func() {
		in.stopped = time.Now()
		in.rec.mark(invariants.FaultsStopped, "")
	}()
	for _, step := range in.plan.Steps {
		if step.Round > 0 && time.Now().Add(step.Pause+step.End-step.Start).After(until) {
			return nil
		}
		// The pauses between faults are the scenario, not waits.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(step.Pause):
		}
		in.counts[step.Kind]++
		if err := in.inject(ctx, step.Kind, step.Hold); err != nil {
			return fmt.Errorf("injecting %s: %w", step.Kind, err)
		}
	}
	return nil
}

// missingKinds are the kinds of faults the run never injected.
func (in *injector) missingKinds() []string {
	var missing []string
	for _, kind := range schedule.Names {
		if in.counts[kind] == 0 {
			missing = append(missing, kind)
		}
	}
	return missing
}

// inject injects a fault of the kind that lasts hold.
func (in *injector) inject(ctx context.Context, kind string, hold time.Duration) error {
	switch kind {
	case schedule.NodeletKilled:
		if err := in.nodelet.Kill(); err != nil {
			return err
		}
		in.rec.mark(invariants.Fault, fmt.Sprintf("%s (down %s)", kind, hold))
		time.Sleep(hold)
		return in.nodelet.Start()
	case schedule.ContainerdRestarted:
		in.rec.mark(invariants.Fault, fmt.Sprintf("%s (down %s)", kind, hold))
		if err := restartDaemon(in.env.StateDir, "containerd", hold); err != nil {
			return err
		}
		return await.Poll(ctx, time.Minute, func(ctx context.Context) error {
			callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := in.runtime.Version(callCtx, "")
			return err
		})
	case schedule.CRIFaults:
		rules := in.criRules()
		in.rec.mark(invariants.Fault, fmt.Sprintf("%s for %s: %s", kind, hold, describeRules(rules)))
		in.proxy.SetRules(rules)
		in.proxy.Enable(true)
		time.Sleep(hold)
		in.proxy.Enable(false)
		return nil
	case schedule.APIServerStopped:
		in.rec.mark(invariants.Fault, fmt.Sprintf("%s for %s", kind, hold))
		return pauseDaemon(in.env.StateDir, "kube-apiserver", hold)
	case schedule.CNIFailing:
		return in.failCNI(hold)
	case schedule.DiskFilled:
		return in.fillDisk(hold)
	}
	return fmt.Errorf("unknown fault %q", kind)
}

// criMethods are the calls a rule may single out.
var criMethods = []string{
	"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus", "ListPodSandbox",
	"CreateContainer", "StartContainer", "StopContainer", "RemoveContainer", "ContainerStatus",
	"ListContainers", "ExecSync", "PullImage", "ImageStatus",
}

// criRules draws the proxy's rules for one CRI fault: one method failing
// often, and every call failing or stalling now and then.
func (in *injector) criRules() []criproxy.Rule {
	return []criproxy.Rule{
		{Method: criMethods[in.rng.IntN(len(criMethods))], ErrorRate: 0.5},
		{Method: "*", ErrorRate: 0.05 + 0.1*in.rng.Float64(), DelayRate: 0.1, MaxDelay: 3 * time.Second, DropRate: 0.5},
	}
}

func describeRules(rules []criproxy.Rule) string {
	var parts []string
	for _, r := range rules {
		parts = append(parts, fmt.Sprintf("%s errors %.0f%% delays %.0f%% up to %s", r.Method, 100*r.ErrorRate, 100*r.DelayRate, r.MaxDelay))
	}
	return strings.Join(parts, "; ")
}

// The stack's scripts (hack/lib.sh start_daemon) record each daemon's PID
// in <state>/run/NAME.pid and append its output to <state>/logs/NAME.log.
func daemonPID(stateDir, name string) (int, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, "run", name+".pid"))
	if err != nil {
		return 0, fmt.Errorf("reading %s's PID: %w", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("%s's PID file: %w", name, err)
	}
	// A recycled PID is never signalled: the stack's daemons name the
	// state folder on their command line.
	if args, err := cmdline(pid); err != nil || !strings.Contains(strings.Join(args, " "), stateDir) {
		return 0, fmt.Errorf("%s (pid %d) is not running", name, pid)
	}
	return pid, nil
}

func cmdline(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}

// pauseDaemon stops the daemon (SIGSTOP) for a while and lets it go on:
// to its clients, a server that answers nothing.
func pauseDaemon(stateDir, name string, stopped time.Duration) error {
	pid, err := daemonPID(stateDir, name)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stopping %s: %w", name, err)
	}
	time.Sleep(stopped)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("continuing %s: %w", name, err)
	}
	return nil
}

// restartDaemon stops the daemon with SIGTERM (SIGKILL after 30 s) and,
// after down, starts it again with the same command line, as the stack's
// scripts would: in its own session, output appended to its log, its PID
// recorded.
func restartDaemon(stateDir, name string, down time.Duration) error {
	pid, err := daemonPID(stateDir, name)
	if err != nil {
		return err
	}
	args, err := cmdline(pid)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping %s: %w", name, err)
	}
	exited := func(context.Context) (bool, error) { return processGone(pid), nil }
	if err := await.Poll(context.Background(), 30*time.Second, await.Condition(exited)); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if err := await.Poll(context.Background(), 10*time.Second, await.Condition(exited)); err != nil {
			return fmt.Errorf("%s (pid %d) did not exit: %w", name, pid, err)
		}
	}
	time.Sleep(down)

	logFile, err := os.OpenFile(filepath.Join(stateDir, "logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s again: %w", name, err)
	}
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(filepath.Join(stateDir, "run", name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
}

// processGone tells whether pid has exited (a zombie has).
func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	// The state follows the command's name in parentheses.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}
