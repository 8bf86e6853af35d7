package runtime

import (
	"context"
	"errors"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodelet/nodelet/internal/pod/action"
)

// ExecRunner is the runtime's CRI service as the prober runs commands
// through it (package action's CommandRunner): the CRI client's timeout
// becomes action.ErrCommandTimedOut, so the prober tells a probe that ran
// too long from one that could not run without importing the CRI client.
func ExecRunner(runtimeService cri.RuntimeService) action.CommandRunner {
	return execRunner{runtimeService}
}

type execRunner struct {
	runtime cri.RuntimeService
}

func (r execRunner) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	stdout, stderr, err := r.runtime.ExecSync(ctx, containerID, cmd, timeout)
	if errors.Is(err, remote.ErrCommandTimedOut) {
		err = execTimedOut{err}
	}
	return stdout, stderr, err
}

// execTimedOut is the CRI client's timeout, its words kept (they are the
// probe's message), that is also action's.
type execTimedOut struct{ err error }

func (e execTimedOut) Error() string   { return e.err.Error() }
func (e execTimedOut) Unwrap() []error { return []error{e.err, action.ErrCommandTimedOut} }
