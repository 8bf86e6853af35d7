// bench measures nodelet against the kubelet side by side, on one stack
// that hack/bench.sh brings up: the same control plane, each agent with its
// own node, containerd, CNI network and cgroup root, the same images
// already pulled on both. It is a benchmark: it prints figures and fails
// only when the workloads cannot run at all, never on a timing.
//
//	bench agents -agent nodelet=ENV -agent kubelet=ENV -out RESULTS.json
//	    runs the workloads on both agents, alternating: one pod at a time,
//	    a pod with an init container, bursts created and deleted at once,
//	    and a stretch of idling with the largest burst running;
//	bench floor -agent ... -in RESULTS.json
//	    with both agents stopped, starts the same pod straight through CRI
//	    on each agent's containerd: the runtime's own floor;
//	bench report -in RESULTS.json -out-dir DIR
//	    prints the table with nodelet/kubelet ratios and writes it, the
//	    JSON and a PNG chart into DIR;
//	bench scale -agent nodelet|kubelet -kubeconfig ADMIN -state-dir DIR -out RESULT.json
//	    (hack/bench-scale.sh) runs N hollow nodes of one agent on a stack
//	    with no node, measures them idle and through a burst of pods;
//	bench scale-report -in NODELET.json -in KUBELET.json -out-dir DIR
//	    prints both runs' per-node figures side by side.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench: ")
	if len(os.Args) < 2 {
		printUsage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "agents":
		err = runAgents(ctx, os.Args[2:])
	case "floor":
		err = runFloor(ctx, os.Args[2:])
	case "report":
		err = runReport(os.Args[2:])
	case "scale":
		err = runScale(ctx, os.Args[2:])
	case "scale-report":
		err = runScaleReport(os.Args[2:])
	default:
		printUsage()
	}
	if err != nil {
		log.Printf("%v", err)
		os.Exit(1)
	}
}

func printUsage() {
	fmt.Fprintln(os.Stderr, "usage: bench agents|floor|report|scale|scale-report [flags] (bench SUBCOMMAND -h lists them)")
	os.Exit(2)
}

// agentsFlags are the agents subcommand's settings.
type agentsFlags struct {
	agents     agentFlag
	kubeconfig string
	namespace  string
	out        string
	bursts     string
	userBursts string
	podTimeout time.Duration
	nodeCPUs   string
	// burstFloorParallelism are the candidates the burst floor tries.
	burstFloorParallelism []int
	settings              Settings
}

func runAgents(ctx context.Context, args []string) error {
	var f agentsFlags
	flags := flag.NewFlagSet("agents", flag.ExitOnError)
	flags.Var(&f.agents, "agent", "NAME=ENVFILE of an agent under test, nodelet and kubelet (give both)")
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "admin kubeconfig of the stack (default: the nodelet stack's ADMIN_KUBECONFIG)")
	flags.StringVar(&f.namespace, "namespace", "bench", "namespace of the bench's pods (created)")
	flags.StringVar(&f.out, "out", "bench.json", "where the raw results go")
	flags.IntVar(&f.settings.SingleRuns, "single-runs", 20, "runs of one pod at a time, per agent")
	flags.IntVar(&f.settings.InitRuns, "init-runs", 10, "runs of one pod with an init container, per agent")
	flags.IntVar(&f.settings.UserRuns, "user-runs", 10, "runs of one users' pod at a time (token, ConfigMap volume, env from a Secret, service links), per agent")
	flags.IntVar(&f.settings.ThreeRuns, "three-runs", 10, "runs of one pod of three containers with a readiness probe, per agent")
	flags.StringVar(&f.bursts, "bursts", "30:5,100:3", "SIZE:RUNS of the bursts, per agent")
	flags.StringVar(&f.userBursts, "user-bursts", "30:3", "SIZE:RUNS of the bursts of users' pods, per agent")
	flags.IntVar(&f.settings.IdlePods, "idle-pods", 100, "the burst size whose runs also idle (0: none)")
	flags.DurationVar(&f.settings.IdleFor, "idle", 60*time.Second, "how long the idle stretch is measured")
	flags.DurationVar(&f.settings.IdleSettle, "idle-settle", 15*time.Second, "how long a burst settles before the idle stretch")
	flags.BoolVar(&f.settings.ReadinessOn, "readiness-probe", true, "give the init workload's container an exec readiness probe (=false for an agent that runs no probes)")
	flags.DurationVar(&f.podTimeout, "pod-timeout", 5*time.Minute, "how long a workload may take before the bench gives up on the agent")
	flags.StringVar(&f.nodeCPUs, "node-cpus", "", "the CPUs the node runs on (a list such as 1 or 2-3,5) when the control plane runs on others: their busy time is reported beside the machine's")
	burstFloorParallelism := flags.String("burst-floor-parallelism", "1,2,4,8,16", "how many pods at a time the burst floor tries, on the first agent's runtime with each workload's largest burst, before the workload's first burst; after each round of bursts the same pods start straight through CRI on each runtime at the fastest, the agents frozen (empty: no burst floor)")
	_ = flags.Parse(args)

	agents, envs, err := parseAgents(f.agents)
	if err != nil {
		return err
	}
	if f.kubeconfig == "" {
		if f.kubeconfig, err = envs[0].get("ADMIN_KUBECONFIG"); err != nil {
			return err
		}
	}
	auditLog, err := envs[0].get("AUDIT_LOG")
	if err != nil {
		return err
	}
	if f.settings.InitImage, err = envs[0].get("BUSYBOX_IMAGE"); err != nil {
		return err
	}
	if f.settings.Image, err = envs[0].get("PAUSE_IMAGE"); err != nil {
		return err
	}
	if f.settings.NodeCPUs, err = parseCPUList(f.nodeCPUs); err != nil {
		return err
	}
	if *burstFloorParallelism != "" {
		if f.burstFloorParallelism, err = parseCounts(*burstFloorParallelism); err != nil {
			return err
		}
	}
	if f.settings.Bursts, f.settings.BurstRuns, err = parseBursts(f.bursts); err != nil {
		return err
	}
	if f.settings.UserBursts, f.settings.UserBurstRuns, err = parseBursts(f.userBursts); err != nil {
		return err
	}
	if f.settings.IdlePods != 0 && f.settings.BurstRuns[f.settings.IdlePods] > 0 {
		f.settings.IdleRuns = f.settings.BurstRuns[f.settings.IdlePods]
	}

	results := &Results{Started: time.Now(), Machine: describeMachine(), Settings: f.settings, Agents: map[string]*AgentResults{}}
	for _, a := range agents {
		results.Agents[a.Name] = &AgentResults{Node: a.Node, User: a.User}
	}
	windows, err := agentsRun(ctx, f, agents, results)
	results.Finished = time.Now()
	// The API server logs a request when its response is complete: give
	// the last window's a moment to land.
	time.Sleep(time.Second)
	if countErr := countRequests(auditLog, windows); countErr != nil {
		err = errors.Join(err, countErr)
	}
	if writeErr := writeResults(f.out, results); writeErr != nil {
		return errors.Join(err, writeErr)
	}
	log.Printf("wrote %s", f.out)
	return err
}

func parseAgents(specs []string) ([]*agent, []stackEnv, error) {
	var agents []*agent
	var envs []stackEnv
	for _, spec := range specs {
		a, env, err := parseAgent(spec)
		if err != nil {
			return nil, nil, err
		}
		agents = append(agents, a)
		envs = append(envs, env)
	}
	if len(agents) != 2 || agents[0].Name == agents[1].Name {
		return nil, nil, errors.New("give both agents: -agent nodelet=ENVFILE -agent kubelet=ENVFILE")
	}
	return agents, envs, nil
}

// parseCounts reads "1,2,4" into positive counts.
func parseCounts(spec string) ([]int, error) {
	var counts []int
	for _, item := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(item))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("count %q: want a positive number", item)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

// parseCPUList reads a CPU list as taskset and cpusets write it ("1",
// "0-1,3") into CPU numbers in order; "" is none.
func parseCPUList(spec string) ([]int, error) {
	var cpus []int
	if spec == "" {
		return cpus, nil
	}
	for _, item := range strings.Split(spec, ",") {
		first, last, isRange := strings.Cut(item, "-")
		if !isRange {
			last = first
		}
		from, err1 := strconv.Atoi(first)
		to, err2 := strconv.Atoi(last)
		if err1 != nil || err2 != nil || from < 0 || to < from {
			return nil, fmt.Errorf("CPU list %q: want CPUs and ranges such as 0-1,3", spec)
		}
		for cpu := from; cpu <= to; cpu++ {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

// parseBursts reads "30:5,100:3" into sizes in order and runs per size.
func parseBursts(spec string) ([]int, map[int]int, error) {
	var sizes []int
	runs := map[int]int{}
	if spec == "" {
		return sizes, runs, nil
	}
	for _, item := range strings.Split(spec, ",") {
		size, count, ok := strings.Cut(item, ":")
		n, err1 := strconv.Atoi(size)
		r, err2 := strconv.Atoi(count)
		if !ok || err1 != nil || err2 != nil || n <= 0 || r <= 0 {
			return nil, nil, fmt.Errorf("burst %q: want SIZE:RUNS, e.g. 100:3", item)
		}
		sizes = append(sizes, n)
		runs[n] = r
	}
	return sizes, runs, nil
}
