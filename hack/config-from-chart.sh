#!/usr/bin/env bash
# Writes the DaemonSets of the kustomize configuration from the Helm chart,
# so that `kubectl apply -k config/default` runs the chart's layout (nodelet's
# DaemonSet, and the runtime's DaemonSet whose pod holds the companion's
# pods, with its containerd configuration): charts/nodelet rendered with its
# default values (its image too: the appVersion's tag, which a release's
# copy of config/default pins by digest, hack/release-manifests.sh), then
# given config/'s names (agent, runtime, in namespace system, prefixed by
# config/default) and labels, and without what
# only a Helm release has (the release labels its uninstall hook selects the
# companion Nodes by, the configuration checksum).
#
#   hack/config-from-chart.sh           writes config/manager/manager.yaml
#                                       and config/runtime/runtime.yaml
#   hack/config-from-chart.sh --check   fails when they differ from what it
#                                       would write (hack/check-manifests.sh)
#
# Needs helm in .cache/bin (hack/check-manifests.sh builds it) and python3.
# shellcheck source=hack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHART_DIR=$REPO_ROOT/charts/nodelet
HELM=$BIN_DIR/helm

# to_config reads a rendering of the chart and writes it as config/'s, the
# comments kept.
to_config() {
	python3 -c '
import re, sys
text = sys.stdin.read()
names = {"nodelet": "agent", "nodelet-runtime": "runtime"}
out, skip_comments = [], False
lines = text.split("\n")
i = 0
while i < len(lines):
    line = lines[i]
    i += 1
    if line.startswith("# Source:") or re.match(r"\s+(helm\.sh/chart|app\.kubernetes\.io/(instance|version)):", line):
        continue
    # The release labels, for the uninstall hook, with their comment.
    if re.match(r"\s+# The release.s, which its post-delete hook deletes\.$", line):
        continue
    if re.match(r"\s+- --node-labels=nodelet\.dev/release=", line):
        continue
    # The configuration checksum and the runtime revision, a Helm
    # release'"'"'s alone: without them, no RuntimeOutOfDate condition.
    if re.match(r"\s+annotations:$", line) and i < len(lines) and lines[i].strip().startswith("# Which configuration"):
        while i < len(lines) and (lines[i].strip().startswith("#") or "checksum/" in lines[i] or "nodelet.dev/runtime-revision:" in lines[i]):
            i += 1
        continue
    if re.match(r"\s+# The runtime.s pod records the revision", line):
        while i < len(lines) and not lines[i].strip().startswith("- --runtime-revision="):
            i += 1
        i += 1
        continue
    line = line.replace("app.kubernetes.io/managed-by: Helm", "app.kubernetes.io/managed-by: kustomize")
    line = line.replace("namespace: nodelet-system", "namespace: system")
    line = line.replace("serviceAccountName: nodelet", "serviceAccountName: agent")
    m = re.match(r"^(\s*(?:name|priorityClassName): )(\S+)$", line)
    if m and m.group(2) in names:
        line = m.group(1) + names[m.group(2)]
    out.append(line)
print("\n".join(out).strip("\n-").strip())
'
}

# write_config DIR writes the two files under DIR (config/'s layout).
write_config() {
	local dir=$1 header
	header="# Generated from charts/nodelet (its default values) by
# hack/config-from-chart.sh: do not edit; change the chart and run it."
	mkdir -p "$dir/manager" "$dir/runtime"
	{
		echo "$header"
		echo "#"
		echo "# nodelet's DaemonSet: the agent of the companion Node <node>-nodelet"
		echo "# beside each labelled node's kubelet (see \"As a DaemonSet\" in the README)."
		"$HELM" template --kube-version "$KUBE_VERSION" nodelet "$CHART_DIR" --namespace nodelet-system --show-only templates/daemonset.yaml | to_config
	} >"$dir/manager/manager.yaml"
	{
		echo "$header"
		echo "---"
		"$HELM" template --kube-version "$KUBE_VERSION" nodelet "$CHART_DIR" --namespace nodelet-system \
			--show-only templates/runtime-priorityclass.yaml --show-only templates/runtime-config.yaml \
			--show-only templates/runtime-daemonset.yaml | to_config
	} >"$dir/runtime/runtime.yaml"
}

main() {
	[[ -x $HELM ]] || die "no helm at $HELM: hack/check-manifests.sh builds it"
	if [[ ${1:-} == --check ]]; then
		local work
		work=$(mktemp -d)
		write_config "$work"
		local failed=0 file
		for file in manager/manager.yaml runtime/runtime.yaml; do
			if ! diff -u --label "config/$file" --label "charts/nodelet, rendered" "$REPO_ROOT/config/$file" "$work/$file" >&2; then
				failed=1
			fi
		done
		rm -rf "$work"
		((failed == 0)) || die "config/ differs from charts/nodelet: run hack/config-from-chart.sh"
		return 0
	fi
	write_config "$REPO_ROOT/config"
	log "Wrote config/manager/manager.yaml and config/runtime/runtime.yaml from charts/nodelet"
}

main "$@"
