// Package controllers drives the runtime, as the controllers do, where
// importing it and the subsystems around it is allowed.
package controllers

import (
	remote "k8s.io/cri-client/pkg"

	"github.com/nodelet/nodelet/internal/volume"
	noderuntime "github.com/nodelet/nodelet/runtime"
)

// Manager is the runtime manager the controllers drive.
type Manager = noderuntime.Manager

// OnHost and Builder are a subsystem's and a CRI client's.
var (
	OnHost  = volume.OnHost
	Builder = remote.NewRemoteRuntimeServiceBuilder
)
