package runtime

import (
	"context"
	"sync"
	"time"

	crierrors "k8s.io/cri-api/pkg/errors"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// exitSettlePeriod is how long after a container's exit its runtime's
// report of it may still change. containerd 1.6 learns of an OOM kill
// through a TaskOOM event that can arrive after the task's exit (its
// issue 8180, fixed in 2.2 by sending the OOM first): until then it reports
// the exit as reason Error, code 137, and only then as OOMKilled. A status
// read in that moment would say Error for good, as the pod may be terminal
// by then. The kubelet mostly escapes it by relisting only every second;
// nodelet waits that long on purpose, and only for such an exit. The
// event may come later still, or never (containerd issue 8893, and always
// under the systemd driver, whose scope is gone before it is read): the
// kernel's own log (Config.OOMKills) then says what the runtime does not.
const exitSettlePeriod = time.Second

// reasonOOMKilled is the reason of a container the OOM killer stopped.
const reasonOOMKilled = "OOMKilled"

// exitCodeSIGKILL is the code a process killed by SIGKILL exits with, as
// the kernel's OOM killer does.
const exitCodeSIGKILL = 128 + 9

// exitSettlesAt returns when the runtime's report of the container's exit
// is final, if it may not be yet at now: a SIGKILL nodelet did not send,
// reported without a reason of its own, less than exitSettlePeriod ago.
func exitSettlesAt(c *kubecontainer.ContainerStatus, stoppedByNodelet bool, now time.Time) (time.Time, bool) {
	if c.State != kubecontainer.ContainerExited || c.ExitCode != exitCodeSIGKILL || c.Reason != "Error" || stoppedByNodelet || c.FinishedAt.IsZero() {
		return time.Time{}, false
	}
	settles := c.FinishedAt.Add(exitSettlePeriod)
	return settles, now.Before(settles)
}

// stopRequests remembers the containers nodelet asked the runtime to stop,
// so that their SIGKILL is known to be nodelet's own and not an OOM kill.
// The zero value is ready to use.
type stopRequests struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func (s *stopRequests) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]struct{}{}
	}
	s.ids[id] = struct{}{}
}

func (s *stopRequests) has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ids[id]
	return ok
}

func (s *stopRequests) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}

// settledContainer returns the container's status once its exit report is
// final: read again from the runtime after exitSettlePeriod when it may
// not have been. A container past that period no longer needs its stop
// request remembered.
func (m *Manager) settledContainer(ctx context.Context, sandboxID string, cs *kubecontainer.ContainerStatus) (*kubecontainer.ContainerStatus, error) {
	if cs.State != kubecontainer.ContainerExited {
		return cs, nil
	}
	if m.kernelOOMKilled(cs) {
		return withReason(cs, reasonOOMKilled), nil
	}
	now := m.clock.Now()
	settles, unsettled := exitSettlesAt(cs, m.stops.has(cs.ID.ID), now)
	if !unsettled {
		if !now.Before(cs.FinishedAt.Add(exitSettlePeriod)) {
			m.stops.forget(cs.ID.ID)
		}
		return cs, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-m.clock.After(settles.Sub(now)):
	}
	resp, err := m.runtime.ContainerStatus(ctx, cs.ID.ID, false)
	if crierrors.IsNotFound(err) {
		return cs, nil
	}
	if err != nil {
		return nil, err
	}
	cs = m.containerFromStatus(sandboxID, resp.GetStatus())
	if m.kernelOOMKilled(cs) {
		return withReason(cs, reasonOOMKilled), nil
	}
	return cs, nil
}

// kernelOOMKilled tells whether the container's exit the runtime reports
// as a plain SIGKILL is one the kernel's log says the OOM killer caused.
// The runtime itself calls any exit after an OOM kill in the container's
// cgroup OOMKilled; so does this.
func (m *Manager) kernelOOMKilled(cs *kubecontainer.ContainerStatus) bool {
	return m.config.OOMKills != nil && cs.ExitCode == exitCodeSIGKILL && cs.Reason == "Error" && m.config.OOMKills.Killed(cs.ID.ID)
}

// withReason returns a copy of the status with the reason given.
func withReason(cs *kubecontainer.ContainerStatus, reason string) *kubecontainer.ContainerStatus {
	c := *cs
	c.Reason = reason
	return &c
}
