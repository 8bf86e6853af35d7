// Package runtime breaks the runtime's layering, for the lint
// configuration's test: a path named runtime is the CRI manager's.
package runtime

import (
	// The types package is below the runtime: allowed.
	kubecontainer "github.com/nodelet/nodelet/internal/container"
	// The volume manager is above it: what the runtime needs of it comes
	// through runtime.Config.
	"github.com/nodelet/nodelet/internal/volume"
)

// Status is a type of the layer below.
type Status = kubecontainer.PodStatus

// OnHost is a call into the layer above.
var OnHost = volume.OnHost
