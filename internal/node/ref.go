package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Ref points an event at the Node, as the kubelet's node events do: its
// UID is its name, so the event finds the Node whatever object it is now.
func Ref(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}
