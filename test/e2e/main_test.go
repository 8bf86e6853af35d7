// These tests run against the real stack named by $NODELET_E2E_ENV (the
// env file `hack/local-up.sh e2e --no-nodelet` writes): a real API server,
// scheduler and controller-manager, a real containerd with runc and CNI,
// and nodelet itself, which TestMain builds if needed and starts.
//
// Most tests call t.Parallel. go test runs all sequential top-level tests
// before it releases the parallel ones, so the tests that do not —
// TestRestartSafety, TestRestartKeepsProbedPodsReady,
// TestClusterAddOnsSurviveNodeletRestart,
// TestPendingResizeSurvivesANodeletRestart,
// TestStatefulSetKeepsItsDataAcrossRecreationAndANodeletKill and
// TestClaimChurnWithNodeletKilledLeavesNothingMounted, which kill nodelet, the ones
// that restart it with other flags (TestBootstrapTokenGivesTheNodeItsCertificate among them), the 100 MB log, the burst of the
// status invariants checker, the two termination tests that time what
// they check, and the pod start metric's, which counts starts while no
// other test starts pods, and TestStaticPodsRunWhileTheAPIServerIsStopped,
// which stops the API server — always run alone.
//
// Tiers. The tests of the files named *_full_test.go (built with
// `//go:build full`) are the full tier's (`make test-full`); the others
// are the gate's (`make test`, CI). A test is in the full tier because it
// costs about a minute of the gate's sequential part for what it adds
// beyond the gate, never because it is flaky:
//   - TestNoExecuteTaintRejectsPodsThatDoNotTolerateIt taints the whole
//     node, the taint eviction controller held back by an admission
//     policy (90 s alone on two busy cores);
//   - TestEvictionUnderMemoryPressure and TestEvictionUnderDiskPressure
//     restart nodelet with thresholds and fill memory or the disk (the
//     gate's chaos run fills the disk and checks the evictions);
//   - TestServingCertificateFromTheCertificatesAPI waits out a
//     two-minute certificate to see it renewed, and
//     TestBootstrapTokenGivesTheNodeItsCertificate restarts nodelet from a
//     bootstrap token;
//   - TestNetworkChurnWithNodeletKilledLeavesNothingBehind and
//     TestClaimChurnWithNodeletKilledLeavesNothingMounted churn pods
//     while killing nodelet (the gate's chaos run does both, with its
//     leak check);
//   - TestCSIBlockVolumeIsMappedAndItsBytesOutliveThePod and
//     TestPendingResizeSurvivesANodeletRestart restart nodelet or a
//     driver around one case each (the gate keeps a CSI volume across a
//     nodelet kill, and resizes in place);
//   - TestLogRotation and TestLogsOfAHundredMegabytes restart nodelet with
//     small log limits, or write 100 MB;
//   - TestProjectedTokenIsRefreshedBeforeItExpires waits eight minutes
//     for a token's refresh: the slow lane, on a stack of its own.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// f is the suite's framework, set up by TestMain.
var f *Framework

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse()
	envPath := os.Getenv("NODELET_E2E_ENV")
	if envPath == "" {
		// Failing, not passing: a suite that did not run must not look
		// like one that passed.
		fmt.Fprintln(os.Stderr, "e2e: NODELET_E2E_ENV is not set, so there is no stack to test against; run the suite with make e2e (a stack left up), make test-e2e or make test, which bring one up")
		return 1
	}
	// The tests spend their time waiting on the cluster, not on the CPU:
	// run them all at once unless -parallel says otherwise.
	if !flagGiven("test.parallel") {
		_ = flag.Set("test.parallel", "32")
	}

	env, err := LoadEnv(envPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if env.NodeletStarted {
		fmt.Fprintln(os.Stderr, "e2e: the stack already runs a nodelet; the suite starts its own, and two must never share a node: bring the stack up with --no-nodelet")
		return 1
	}
	busyboxImage = env.BusyboxImage
	ctx := context.Background()
	f, err = NewFramework(ctx, env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}

	bin := env.NodeletBin
	if _, err := os.Stat(bin); bin == "" || err != nil {
		dir, err := os.MkdirTemp("", "nodelet-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		fmt.Printf("e2e: NODELET_BIN %q is not there; building nodelet\n", env.NodeletBin)
		if bin, err = BuildNodelet(dir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	if f.Nodelet, err = NewNodelet(bin, env); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := f.Nodelet.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer func() {
		if err := f.Nodelet.Stop(30 * time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: stopping nodelet:", err)
		}
	}()

	// Users wait for the node to be Ready before they create pods; so
	// does the suite.
	start := time.Now()
	if _, err := f.waitForNodeReady(ctx, 2*time.Minute); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\nnodelet log (last 80 lines):\n%s\n", err, f.Nodelet.LogLines("", 80))
		return 1
	}
	fmt.Printf("e2e: node %s Ready %s after nodelet started (nodelet %s, log %s)\n",
		env.NodeName, time.Since(start).Round(time.Millisecond), bin, env.NodeletLog)
	// The node's API too: the node may still look Ready from an earlier
	// run.
	if env.NodeletPort != "" {
		if err := f.waitForNodeAPI(ctx, time.Minute); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\nnodelet log (last 80 lines):\n%s\n", err, f.Nodelet.LogLines("", 80))
			return 1
		}
	}

	return m.Run()
}

func flagGiven(name string) bool {
	given := false
	flag.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			given = true
		}
	})
	return given
}
