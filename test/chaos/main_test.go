// Package chaos is nodelet's chaos suite: on the real stack (as `hack/local-up.sh
// e2e --no-nodelet` brings it up), it churns pods of every kind nodelet
// supports while injecting faults at random — nodelet SIGKILLed and
// started again, containerd restarted, CRI calls failing, stalling and
// losing their replies through a fault-injecting proxy (criproxy) between
// nodelet and containerd, the API server stopped for a while — then stops
// the faults and checks the run's trace (invariants.Check) and the node
// (invariants.Leaks), and prints the run's figure.
//
//	make chaos CHAOS_DURATION=30m CHAOS_SEED=7
//
// runs it; `make test` runs a short fixed-seed run of it after the e2e
// suite. The seed draws the pods, the faults and their moments, so a
// failing run is replayed with its seed (the timing of a real stack makes
// the replay close, not exact).
package chaos

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nodelet/nodelet/test/e2e"
)

var (
	duration   = flag.Duration("duration", 2*time.Minute, "how long pods are churned while faults are injected")
	seed       = flag.Uint64("seed", 1, "the seed of the pods, the faults and their moments")
	livePods   = flag.Int("pods", 10, "how many churned pods exist at once")
	converge   = flag.Duration("converge", 30*time.Second, "how long pods may take to settle after the last fault")
	apiStopMax = flag.Duration("api-stop-max", 20*time.Second, "the longest the API server is stopped for")
	tracePath  = flag.String("trace", "", "where the run's trace is written (default: chaos-trace.jsonl in the stack's logs folder)")
)

// stackEnv and nodeletBin are what TestMain found: the stack and the
// nodelet to run on it.
var (
	stackEnv   e2e.Env
	nodeletBin string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	envPath := os.Getenv("NODELET_E2E_ENV")
	if envPath == "" {
		// Failing, not passing: a run that did not happen must not look
		// like one that passed.
		fmt.Fprintln(os.Stderr, "chaos: NODELET_E2E_ENV is not set, so there is no stack to run on; run it with make chaos, which brings one up")
		return 1
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "chaos: must run as root (it restarts containerd and reads the node's mounts and cgroups)")
		return 1
	}
	env, err := e2e.LoadEnv(envPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	if env.NodeletStarted {
		fmt.Fprintln(os.Stderr, "chaos: the stack already runs a nodelet; bring it up with --no-nodelet")
		return 1
	}
	stackEnv, nodeletBin = env, env.NodeletBin
	if _, err := os.Stat(nodeletBin); nodeletBin == "" || err != nil {
		dir, err := os.MkdirTemp("", "nodelet-chaos-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if nodeletBin, err = e2e.BuildNodelet(dir); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
	}
	return m.Run()
}
