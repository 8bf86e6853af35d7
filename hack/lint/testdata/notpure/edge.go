// Package notpure does what podstatus does, at the edge, where it is
// allowed.
package notpure

import (
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader is a client, as an edge may hold one.
type Reader = client.Reader

// Deadline reads the clock and the environment.
func Deadline() time.Time {
	if os.Getenv("LATE") != "" {
		return time.Now().Add(time.Hour)
	}
	return time.Now()
}
