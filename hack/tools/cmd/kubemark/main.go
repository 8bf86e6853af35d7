// The reference hollow node (kubemark's hollow kubelet, with a fake CRI),
// built only for `make bench-scale`.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kubemark/app"
)

func main() {
	os.Exit(cli.Run(app.NewHollowNodeCommand()))
}
