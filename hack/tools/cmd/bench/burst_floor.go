package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The burst floor is taken beside the bursts it is set against, as the
// single floor is beside the single-pod runs: after each round of bursts
// (one burst of a size by every agent), one floor burst of the same pods
// on each runtime. Taken once, after every agent had run, it met the VM at
// another speed than the bursts did: between two full runs the burst
// floors moved by a fifth while the agents' bursts moved half as much.

// burstFloorPlan is what the floor bursts taken between the agents'
// bursts need besides the floor containers (runner.floorMains).
type burstFloorPlan struct {
	// candidates are the parallelisms tried, on the first agent's runtime
	// with a workload's largest burst, before its first burst.
	candidates []int
	// parallelism is the fastest candidate, by workload, once tried.
	parallelism map[string]int
}

// burstFloorParallelism is how many pods at a time the floor starts
// workload's pods: the candidate with which the first agent's runtime
// started the workload's largest burst fastest, tried once. The largest,
// since a small burst ends about as soon at any parallelism on a machine
// of few CPUs (within its runs' spread), where a large one shows which is
// fastest.
func (r *runner) burstFloorParallelism(ctx context.Context, workload string) (int, error) {
	if p, ok := r.burstFloor.parallelism[workload]; ok {
		return p, nil
	}
	sizes := r.settings.Bursts
	if workload == userWorkload {
		sizes = r.settings.UserBursts
	}
	largest := slices.Max(sizes)
	first := r.agents[0]
	var tries []BurstFloorRun
	for _, p := range r.burstFloor.candidates {
		run, err := r.floorBurst(ctx, first, workload, largest, p, -p)
		if err != nil {
			return 0, err
		}
		log.Printf("burst floor search: %d %s pods %d at a time on %s's runtime (agents frozen): %.2fs", largest, cmp.Or(workload, "pause"), p, first.Name, run.Seconds)
		tries = append(tries, run)
	}
	best := fastestParallelism(tries)
	r.burstFloor.parallelism[workload] = best
	if workload == "" {
		r.results.Settings.FloorParallelism = best
	}
	return best, nil
}

// burstFloorRound takes round run's floor bursts of n workload pods, one
// on each runtime.
func (r *runner) burstFloorRound(ctx context.Context, workload string, n, run int) error {
	p, err := r.burstFloorParallelism(ctx, workload)
	if err != nil {
		return err
	}
	for _, a := range inTurn(r.agents, run) {
		floor, err := r.floorBurst(ctx, a, workload, n, p, run)
		if err != nil {
			return err
		}
		log.Printf("burst floor of %d %s pods %d at a time, round %d, on %s's runtime (agents frozen): %.2fs", n, cmp.Or(workload, "pause"), p, run+1, a.Name, floor.Seconds)
		r.results.Agents[a.Name].BurstFloor = append(r.results.Agents[a.Name].BurstFloor, floor)
	}
	return nil
}

// floorBurst waits for the node's CPUs to be quiet, then times one floor
// burst of n workload pods on a's runtime with every agent frozen and the
// bench itself on the node's CPUs, standing in for an agent as the
// floor's client. The wait comes before the freeze, which lasts the floor
// burst and its removal (a round thaws the agents between its runtimes):
// about a minute for a burst of 100 here, within the two minutes the
// bench's node controller waits for a Lease renewal (hack/bench.sh). A
// freeze nearing them is logged.
func (r *runner) floorBurst(ctx context.Context, a *agent, workload string, n, parallelism, run int) (BurstFloorRun, error) {
	what := fmt.Sprintf("floor of %d on %s's runtime", n, a.Name)
	if err := waitQuiet(ctx, what, r.settings.NodeCPUs, r.results.Machine.CPUs); err != nil {
		return BurstFloorRun{}, err
	}
	var floor BurstFloorRun
	frozen := time.Now()
	err := frozenOnNode(r.agents, r.settings.NodeCPUs, func() (err error) {
		floor, err = r.floors[a.Name].burstFloor(ctx, a, workload, r.floorMains[a.Name][workload], r.settings.NodeCPUs, n, parallelism, run)
		return err
	})
	if d := time.Since(frozen); d > freezeWarning {
		log.Printf("the agents were frozen for %.0fs for the %s", d.Seconds(), what)
	}
	return floor, err
}

// freezeWarning is how long a freeze may last before it is logged: three
// quarters of the bench's node monitor grace period.
const freezeWarning = 90 * time.Second

// frozenOnNode runs measure with agents frozen and this process on
// nodeCPUs; it thaws them and moves back whatever measure returns.
func frozenOnNode(agents []*agent, nodeCPUs []int, measure func() error) error {
	thaw, err := freezeAgents(agents)
	defer thaw()
	if err != nil {
		return err
	}
	back, err := moveToCPUs(nodeCPUs)
	if err != nil {
		return err
	}
	return errors.Join(measure(), back())
}

// moveToCPUs confines every thread of this process to cpus (taskset, as
// hack/bench.sh confines the daemons) and returns what puts them back
// where they were; with no cpus it does nothing.
func moveToCPUs(cpus []int) (back func() error, err error) {
	if len(cpus) == 0 {
		return func() error { return nil }, nil
	}
	was, err := allowedCPUs(os.Getpid())
	if err != nil {
		return nil, err
	}
	if err := confine(cpuList(cpus)); err != nil {
		return nil, err
	}
	return func() error { return confine(was) }, nil
}

func confine(cpus string) error {
	pid := strconv.Itoa(os.Getpid())
	if out, err := exec.Command("taskset", "-a", "-c", "-p", cpus, pid).CombinedOutput(); err != nil {
		return fmt.Errorf("confining the bench (pid %s) to CPUs %s: %w: %s", pid, cpus, err, out)
	}
	return nil
}

// allowedCPUs is the Cpus_allowed_list of a process or thread's status
// file, such as "0-1".
func allowedCPUs(pid int) (string, error) {
	return allowedCPUsOf(fmt.Sprintf("/proc/%d/status", pid))
}

func allowedCPUsOf(statusFile string) (string, error) {
	data, err := os.ReadFile(statusFile)
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		if list, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(list), nil
		}
	}
	return "", fmt.Errorf("%s has no Cpus_allowed_list", statusFile)
}

// cpuList writes cpus as taskset reads them: "1,3".
func cpuList(cpus []int) string {
	items := make([]string, len(cpus))
	for i, cpu := range cpus {
		items[i] = strconv.Itoa(cpu)
	}
	return strings.Join(items, ",")
}
