// Package pleg holds a CRI client, for the lint configuration's test: a
// path named internal/pleg reads the runtime through an interface.
package pleg

import remote "k8s.io/cri-client/pkg"

// Builder is a CRI client's where the runtime's answers should be.
var Builder = remote.NewRemoteRuntimeServiceBuilder
