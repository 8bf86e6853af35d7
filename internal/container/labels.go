package container

import "k8s.io/apimachinery/pkg/types"

// The labels the runtime puts on every sandbox and container it makes,
// naming the pod and container it belongs to. They are the kubelet's, so
// tools that read them (log shippers, crictl users, monitoring agents, the
// node server's stats) see nodelet's pods as pods.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// PodIdentity is who a runtime object belongs to, as its labels say.
type PodIdentity struct {
	UID       types.UID
	Name      string
	Namespace string
}
