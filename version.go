package main

import "github.com/nodelet/nodelet/internal/options"

// baseVersion is nodelet's own semantic version, the one place it is
// defined.
const baseVersion = "v0.1.0"

// commit is set at build time with -ldflags "-X main.commit=...": the
// abbreviated commit, "-dirty" appended for a modified working tree.
var commit = ""

// version is what nodelet reports as the kubelet's version: the Node's
// nodeInfo.kubeletVersion, and `nodelet --version` ("Kubernetes <version>",
// as the kubelet prints it, which kubeadm's preflight reads). It is the
// version of Kubernetes nodelet implements, with nodelet's own version and
// commit as semver build metadata (v1.36.3+nodelet.v0.1.0.7f8550a), so
// tools that parse and compare the kubelet's version read the Kubernetes
// version and nodelet's stays visible.
var version = fullVersion(options.KubernetesVersion, baseVersion, commit)

// fullVersion is the Kubernetes version with "nodelet", nodelet's version
// and its commit, when known, as build metadata: dot-separated
// identifiers of [0-9A-Za-z-] ("-dirty" stays within one).
func fullVersion(kubernetes, nodelet, commit string) string {
	metadata := "nodelet." + nodelet
	if commit != "" {
		metadata += "." + commit
	}
	return kubernetes + "+" + metadata
}
