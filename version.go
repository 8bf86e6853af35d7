package main

// baseVersion is nodelet's semantic version, the one place it is defined.
// The Node reports it as nodeInfo.kubeletVersion, with the commit it was
// built from as build metadata (v0.1.0+7f8550a), so tools that parse the
// kubelet's version as semver read nodelet's too.
const baseVersion = "v0.1.0"

// commit is set at build time with -ldflags "-X main.commit=...": the
// abbreviated commit, "-dirty" appended for a modified working tree.
var commit = ""

var version = fullVersion(baseVersion, commit)

// fullVersion is the base version with the commit as semver build
// metadata, or the base version alone when the commit is not known.
func fullVersion(base, commit string) string {
	if commit == "" {
		return base
	}
	return base + "+" + commit
}
