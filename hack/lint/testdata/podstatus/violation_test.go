package podstatus

import (
	"os"
	"testing"
	"time"
)

// A test may read the clock and the filesystem to drive pure code.
func TestDeadline(t *testing.T) {
	if Deadline().Before(time.Now().Add(-time.Minute)) {
		t.Error("the deadline is in the past")
	}
	_ = os.Getenv("HOME")
}
