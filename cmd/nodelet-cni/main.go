// nodelet-cni is the CNI plugin of nodelet's agent network mode: the
// runtime's only CNI configuration names it, and it forwards every call to
// nodelet over a unix socket (see package network/cnishim).
package main

import (
	"os"

	"github.com/nodelet/nodelet/network/cnishim"
)

func main() {
	os.Exit(cnishim.Run(os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}
