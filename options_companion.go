package main

// The flags of a companion node: one that runs as a DaemonSet pod beside
// the host's kubelet (see "As a DaemonSet" in the README).

import (
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/node"
)

func (o *Options) bindCompanionFlags(fs *pflag.FlagSet) {
	fs.Var(&taintsFlag{taints: &o.RegisterWithTaints}, "register-with-taints", "Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"); a Node that exists keeps its own.")
}

// nodeIPs is --node-ip as the node status reporter takes it: none lets it
// find the host's.
func (o *Options) nodeIPs() []string {
	if o.NodeIP == "" {
		return nil
	}
	return []string{o.NodeIP}
}

// taintsFlag is --register-with-taints: each time it is given it replaces
// the list, as the kubelet's.
type taintsFlag struct{ taints *[]corev1.Taint }

func (f *taintsFlag) String() string {
	if f.taints == nil {
		return ""
	}
	return node.FormatTaints(*f.taints)
}

func (f *taintsFlag) Set(value string) error {
	taints, err := node.ParseTaints(value)
	if err != nil {
		return err
	}
	*f.taints = taints
	return nil
}

func (f *taintsFlag) Type() string { return "[]v1.Taint" }
