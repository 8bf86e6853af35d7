// kubeadm, the same version as the control plane, for the test bed that
// brings a cluster up with `kubeadm init` and `kubeadm join` on guests
// whose node agent is nodelet (test/vm/kubeadm_full_test.go).
package main

import (
	"k8s.io/kubernetes/cmd/kubeadm/app"
	utilerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
)

func main() {
	utilerrors.HandleError(app.Run())
}
