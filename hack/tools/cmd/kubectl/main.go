// kubectl at the same version as the control plane, so the scripts and the
// e2e suite never depend on whichever client the machine happens to have.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
