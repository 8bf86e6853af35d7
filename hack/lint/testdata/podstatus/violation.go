// Package podstatus breaks every rule for pure code, for the lint
// configuration's test: a path named podstatus is pure.
package podstatus

import (
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader is a client where a value should be.
type Reader = client.Reader

// Deadline reads the clock and the environment.
func Deadline() time.Time {
	time.Sleep(time.Millisecond)
	if os.Getenv("LATE") != "" {
		return time.Now().Add(time.Hour)
	}
	return time.Now()
}

// Waited reads the clock as a value.
var Waited = time.Since
