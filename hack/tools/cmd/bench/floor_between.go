package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"syscall"
	"time"
)

// The single floor is taken between the agents' single-pod runs, one run
// on each runtime after each pair, so that every floor run meets the
// machine in the same moment as the agents' runs beside it: on a VM whose
// speed swings by the minute, a floor taken once, before or after, sets
// the agents' runs against a different machine. Each single-pod run, like
// each floor run, has the machine without the other agent, frozen.

// thawSettle is how long an agent runs after a thaw before its pod is
// created: it catches up at once on the timers that fired while it was
// frozen (its relist, the kubelet's housekeeping), which must not land in
// a measured start. It is drawn at random between one and two relist
// periods (a second each), so that the pod meets the agent at any point
// of its relist loop, as it would unfrozen: a fixed second would create
// it just as the relist that the thaw restarted comes round again, and
// an agent that learns of its started containers from its next relist
// (the kubelet) would wait most of a period for it every time.
func thawSettle() time.Duration {
	return time.Second + rand.N(time.Second)
}

// floorBetween takes one floor run on each agent's runtime with both
// agents frozen and the bench on the node's CPUs, as the floor's client
// standing in for an agent; run -1 is a warm-up, not recorded.
func (r *runner) floorBetween(ctx context.Context, run int) error {
	return frozenOnNode(r.agents, r.settings.NodeCPUs, func() error {
		for _, a := range inTurn(r.agents, run+1) {
			floor, err := r.floors[a.Name].floorRun(ctx, a, r.floorMains[a.Name][""], run+1)
			if err != nil {
				return err
			}
			if run >= 0 {
				r.results.Agents[a.Name].Floor = append(r.results.Agents[a.Name].Floor, floor)
				log.Printf("floor %d on %s's runtime (agents frozen): %.3fs", run+1, a.Name, floor.Seconds)
			}
		}
		return nil
	})
}

// freezeAgents stops every agent's process (SIGSTOP), as if it were not
// there, without losing its state or its place in the cluster: a freeze
// lasts a single pod's start (under a second), a burst's, or a floor
// burst's with its removal (about a minute for 100 pods here), within the
// two minutes the bench's node controller waits for a Lease renewal
// before it calls a node unreachable; were it to, the frozen node has no
// pods then and is Ready again once thawed. thaw continues them all
// (SIGCONT), once however often it is called, and is safe to call
// whatever freezeAgents returned.
func freezeAgents(agents []*agent) (thaw func(), err error) {
	var frozen []int
	thaw = func() {
		for _, pid := range frozen {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		frozen = nil
	}
	for _, a := range agents {
		pid, err := readPIDFile(a.pidFile())
		if err != nil {
			return thaw, fmt.Errorf("freezing %s: %w", a.Name, err)
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return thaw, fmt.Errorf("freezing %s (pid %d): %w", a.Name, pid, err)
		}
		frozen = append(frozen, pid)
	}
	return thaw, nil
}

// dialFloors connects to every agent's runtime for the floor runs.
func dialFloors(agents []*agent) (map[string]*criClient, func(), error) {
	clients := map[string]*criClient{}
	closeAll := func() {
		for _, c := range clients {
			_ = c.conn.Close()
		}
	}
	for _, a := range agents {
		c, err := dialCRI(a.CRIEndpoint)
		if err != nil {
			closeAll()
			return nil, func() {}, fmt.Errorf("%s's runtime: %w", a.Name, err)
		}
		clients[a.Name] = c
	}
	return clients, closeAll, nil
}
