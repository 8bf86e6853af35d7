package runtime

import (
	"errors"
	"fmt"
	"testing"

	critest "k8s.io/cri-api/pkg/apis/testing"
	remote "k8s.io/cri-client/pkg"

	"github.com/nodelet/nodelet/internal/pod/action"
)

func TestExecRunnerTellsTheCRIClientsTimeoutAsActions(t *testing.T) {
	fake := critest.NewFakeRuntimeService()
	timedOut := fmt.Errorf("%w: %q timed out after 1s", remote.ErrCommandTimedOut, "cat /ready")
	fake.InjectError("ExecSync", timedOut)
	_, err := action.RunCommand(t.Context(), ExecRunner(fake), "c1", []string{"cat", "/ready"}, 0)
	if exited, _, isTimeout := action.CommandOutcome(err); exited || !isTimeout {
		t.Errorf("CommandOutcome(%v) = exited %t, timed out %t; want a timeout", err, exited, isTimeout)
	}
	if err == nil || err.Error() != timedOut.Error() || !errors.Is(err, remote.ErrCommandTimedOut) {
		t.Errorf("error = %v, want the CRI client's, its words kept", err)
	}

	refused := errors.New("container not running")
	fake.InjectError("ExecSync", refused)
	_, err = action.RunCommand(t.Context(), ExecRunner(fake), "c1", []string{"true"}, 0)
	if _, _, isTimeout := action.CommandOutcome(err); isTimeout || !errors.Is(err, refused) {
		t.Errorf("error = %v, want the runtime's own, not a timeout", err)
	}
}
