package main

import (
	"context"
	"log"
	"time"
)

// A burst, the agent's or the floor's, starts only once the CPUs it runs
// on have gone quiet: the runs before leave work behind them that goes on
// after their pods are gone (the kernel tears network namespaces and
// cgroups down in the background, the runtime collects its snapshots), and
// a burst that starts in it pays for the run before.
const (
	// quietBusy is the share of the watched CPUs' time that may be busy,
	// over quietWindow, for them to count as quiet: above what the idle
	// stack uses (API server, etcd, both agents, both runtimes).
	quietBusy   = 0.2
	quietWindow = time.Second
	// quietTimeout bounds the wait: a machine busy with something else
	// still gets its run, and the log says so.
	quietTimeout = time.Minute
)

// isQuiet reports whether busy CPU-seconds over window, on cpus CPUs, is
// quiet enough for a burst to start.
func isQuiet(busy float64, window time.Duration, cpus int) bool {
	return busy <= quietBusy*window.Seconds()*float64(cpus)
}

// waitQuiet waits until the node's CPUs (nodeCPUs, or every CPU of the
// machine when the node has none of its own) are quiet, or quietTimeout
// has passed, and logs what it waited for.
func waitQuiet(ctx context.Context, what string, nodeCPUs []int, machineCPUs int) error {
	cpus := machineCPUs
	if len(nodeCPUs) > 0 {
		cpus = len(nodeCPUs)
	}
	started := time.Now()
	previous, err := readCPUBusy(nodeCPUs)
	if err != nil {
		return err
	}
	var busy float64
	for time.Since(started) < quietTimeout {
		if err := pause(ctx, quietWindow); err != nil {
			return err
		}
		now, err := readCPUBusy(nodeCPUs)
		if err != nil {
			return err
		}
		delta := now.since(previous)
		previous = now
		busy = delta.machine
		if len(nodeCPUs) > 0 {
			busy = delta.node
		}
		if isQuiet(busy, quietWindow, cpus) {
			if waited := time.Since(started); waited > 2*quietWindow {
				log.Printf("%s: waited %s for the node's CPUs to go quiet", what, waited.Round(time.Second))
			}
			return nil
		}
	}
	log.Printf("%s: the node's CPUs still busy after %s (%.0f%% of %d over the last %s); starting anyway", what, quietTimeout, 100*busy/quietWindow.Seconds()/float64(cpus), cpus, quietWindow)
	return nil
}
