// Package podstatus reads the runtime's answers through the runtime
// manager, for the lint configuration's test: a path named
// internal/pod/podstatus reads them through internal/container.
package podstatus

import noderuntime "github.com/nodelet/nodelet/runtime"

// Status is the manager's where internal/container's should be.
type Status = noderuntime.PodActions
