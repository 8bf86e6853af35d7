package main

import (
	"context"
	"fmt"
	"log"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// burst creates n pods at once, waits until all are Running and Ready,
// optionally keeps them idling while it measures, then deletes them all at
// once and waits until all are gone.
func (r *runner) burst(ctx context.Context, a *agent, kind burstKind, n, run int, idle bool) (BurstRun, *IdleRun, error) {
	ctx, cancel := context.WithTimeout(ctx, r.podTimeout+r.settings.IdleSettle+r.settings.IdleFor)
	defer cancel()
	workload := fmt.Sprintf("%s%d", kind.name, n)
	names := make([]string, n)
	pods := make([]*corev1.Pod, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%s-%d-%d", a.Name, workload, run, i)
		pods[i] = kind.pod(a, names[i])
	}
	r.tracker.forget(names)
	pid, err := readPIDFile(a.pidFile())
	if err != nil {
		return BurstRun{}, nil, fmt.Errorf("agent %s: %w", a.Name, err)
	}
	if err := waitQuiet(ctx, fmt.Sprintf("%s of %d on %s", kind.name, n, a.Name), r.settings.NodeCPUs, r.results.Machine.CPUs); err != nil {
		return BurstRun{}, nil, err
	}

	// The other agent is frozen while this one starts its burst, as for a
	// single pod: its background work (relists, housekeeping, its
	// runtime's answers) would otherwise land on the node's CPUs inside
	// the measured window, which the burst floor, taken with both agents
	// stopped, never meets. Its deletion and idling run with both alive.
	thaw, err := freezeAgents(r.others(a))
	defer thaw()
	if err != nil {
		return BurstRun{}, nil, err
	}
	meter, err := startUsage(pid)
	if err != nil {
		return BurstRun{}, nil, err
	}
	runtimeMeter, err := startRuntimeUsage(a)
	if err != nil {
		return BurstRun{}, nil, err
	}
	busyStart, err := readCPUBusy(r.settings.NodeCPUs)
	if err != nil {
		return BurstRun{}, nil, err
	}
	sent := make([]time.Time, n)
	first := time.Now()
	if err := r.all(ctx, n, func(ctx context.Context, i int) error {
		sent[i] = time.Now()
		_, err := r.client.CoreV1().Pods(r.ns).Create(ctx, pods[i], metav1.CreateOptions{})
		return err
	}); err != nil {
		return BurstRun{}, nil, fmt.Errorf("creating %d pods for %s: %w", n, a.Name, err)
	}
	ready, err := r.tracker.waitReady(ctx, names)
	if err != nil {
		return BurstRun{}, nil, fmt.Errorf("a burst of %d on node %s (%s): %w", n, a.Node, a.Name, err)
	}
	busyEnd, err := readCPUBusy(r.settings.NodeCPUs)
	if err != nil {
		return BurstRun{}, nil, err
	}
	thaw()
	busy := busyEnd.since(busyStart)
	starting, err := meter.stop()
	if err != nil {
		return BurstRun{}, nil, err
	}
	runtimeCPU, err := runtimeMeter.stop()
	if err != nil {
		return BurstRun{}, nil, err
	}
	result := BurstRun{Workload: kind.workload, Pods: n, Start: first, Agent: starting, ContainerdCPUSeconds: runtimeCPU.CPUSeconds,
		MachineCPUSeconds: busy.machine, NodeCPUSeconds: busy.node, ReadySeconds: make([]float64, n)}
	last := first
	for i := range ready {
		result.ReadySeconds[i] = ready[i].Sub(sent[i]).Seconds()
		if ready[i].After(last) {
			last = ready[i]
		}
	}
	result.AllReadySeconds = last.Sub(first).Seconds()

	var idleRun *IdleRun
	if idle {
		if idleRun, err = r.idle(ctx, a, n); err != nil {
			return BurstRun{}, nil, err
		}
	}

	if meter, err = startUsage(pid); err != nil {
		return BurstRun{}, nil, err
	}
	deleting := time.Now()
	if err := r.all(ctx, n, func(ctx context.Context, i int) error {
		return r.client.CoreV1().Pods(r.ns).Delete(ctx, names[i], metav1.DeleteOptions{})
	}); err != nil {
		return BurstRun{}, nil, fmt.Errorf("deleting %d pods of %s: %w", n, a.Name, err)
	}
	gone, err := r.tracker.waitGone(ctx, names)
	if err != nil {
		return BurstRun{}, nil, fmt.Errorf("a burst of %d on node %s (%s): %w", n, a.Node, a.Name, err)
	}
	if result.AgentDeleting, err = meter.stop(); err != nil {
		return BurstRun{}, nil, err
	}
	last = deleting
	for _, t := range gone {
		if t.After(last) {
			last = t
		}
	}
	result.AllGoneSeconds = last.Sub(deleting).Seconds()
	window := newAuditWindow(a.User, first, last)
	r.windows = append(r.windows, window)
	result.Requests = window.Counts
	return result, idleRun, nil
}

// idle measures an agent and its runtime while n pods run and nothing
// changes, after letting the start settle.
func (r *runner) idle(ctx context.Context, a *agent, n int) (*IdleRun, error) {
	if err := pause(ctx, r.settings.IdleSettle); err != nil {
		return nil, err
	}
	agentPID, err := readPIDFile(a.pidFile())
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.Name, err)
	}
	containerdPID, err := readPIDFile(a.containerdPIDFile())
	if err != nil {
		return nil, fmt.Errorf("containerd of %s: %w", a.Name, err)
	}
	before, err := grpcHandled(ctx, a.MetricsAddr)
	if err != nil {
		return nil, err
	}
	agentMeter, err := startUsage(agentPID)
	if err != nil {
		return nil, err
	}
	containerdMeter, err := startUsage(containerdPID)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	// The measurement is this stretch of nothing happening.
	if err := pause(ctx, r.settings.IdleFor); err != nil {
		return nil, err
	}
	end := time.Now()
	run := &IdleRun{Pods: n, Seconds: end.Sub(start).Seconds()}
	if run.Agent, err = agentMeter.stop(); err != nil {
		return nil, err
	}
	if run.Containerd, err = containerdMeter.stop(); err != nil {
		return nil, err
	}
	after, err := grpcHandled(ctx, a.MetricsAddr)
	if err != nil {
		return nil, err
	}
	run.CRICalls, run.CRIByMethod = criCallsBetween(before, after)
	window := newAuditWindow(a.User, start, end)
	r.windows = append(r.windows, window)
	run.Requests = window.Counts
	return run, nil
}

// burstKind is what a burst is made of: the bench's pause pods, or users'
// pods.
type burstKind struct {
	// name prefixes the pods' names; workload is BurstRun.Workload.
	name, workload string
	pod            func(a *agent, name string) *corev1.Pod
}

func (r *runner) pauseBurst() burstKind {
	return burstKind{name: "burst", workload: "", pod: func(a *agent, name string) *corev1.Pod { return r.pod(a, name, "burst") }}
}

func (r *runner) userBurst() burstKind {
	return burstKind{name: "userburst", workload: userWorkload, pod: r.userPod}
}

func (r *runner) runBursts(ctx context.Context, kind burstKind, n, runs int) error {
	idle := kind.workload == "" && n == r.settings.IdlePods
	for i := range runs {
		r.noteLoad()
		for _, a := range inTurn(r.agents, i) {
			result, idleRun, err := r.burst(ctx, a, kind, n, i, idle)
			if err != nil {
				return err
			}
			agentResults := r.results.Agents[a.Name]
			agentResults.Bursts = append(agentResults.Bursts, result)
			log.Printf("%s of %d %d/%d %s: all Ready after %.2fs (p50 %.2fs, p99 %.2fs), %.2f CPU-s, peak RSS %d MiB; all gone after %.2fs",
				kind.name, n, i+1, runs, a.Name, result.AllReadySeconds, Percentile(result.ReadySeconds, 50), Percentile(result.ReadySeconds, 99),
				result.Agent.CPUSeconds, result.Agent.PeakRSSBytes>>20, result.AllGoneSeconds)
			if idleRun != nil {
				agentResults.Idle = append(agentResults.Idle, *idleRun)
				log.Printf("idle with %d pods %d/%d %s: %.2f CPU-s in %.0fs, peak RSS %d MiB, %.1f CRI calls/s",
					n, i+1, runs, a.Name, idleRun.Agent.CPUSeconds, idleRun.Seconds, idleRun.Agent.PeakRSSBytes>>20, idleRun.CRICalls/idleRun.Seconds)
			}
		}
		if r.burstFloor != nil {
			if err := r.burstFloorRound(ctx, kind.workload, n, i); err != nil {
				return err
			}
		}
	}
	return nil
}
