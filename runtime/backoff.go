package runtime

import (
	"time"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// RestartBackoff applies crash-loop back-off to a stopped container
// instance. If wait is true the restart must wait until until; otherwise the
// container may start now and delay is the back-off to record on the new
// instance.
func RestartBackoff(latest *kubecontainer.ContainerStatus, now time.Time) (delay time.Duration, until time.Time, wait bool) {
	started := latest.StartedAt
	if started.IsZero() {
		started = latest.CreatedAt
	}
	// A container that ran long enough earns a fresh sequence.
	if latest.RestartBackoff == 0 || latest.FinishedAt.Sub(started) > 2*MaxRestartBackoff {
		return InitialRestartBackoff, time.Time{}, false
	}
	until = latest.FinishedAt.Add(latest.RestartBackoff)
	if now.Before(until) {
		return 0, until, true
	}
	delay = 2 * latest.RestartBackoff
	if delay > MaxRestartBackoff {
		delay = MaxRestartBackoff
	}
	return delay, time.Time{}, false
}
