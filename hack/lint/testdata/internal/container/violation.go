// Package container imports a package of nodelet that is not a leaf
// helper, for the lint configuration's test: a path named
// internal/container is the types package, below every subsystem.
package container

import (
	// A leaf helper: allowed.
	"github.com/nodelet/nodelet/internal/pod/podutil"
	// The probes' and hooks' actions are not a leaf.
	"github.com/nodelet/nodelet/internal/pod/action"
)

// Grace is a leaf helper's.
var Grace = podutil.TerminationGracePeriodSeconds

// Sleep is a subsystem's.
var Sleep = action.Sleep
