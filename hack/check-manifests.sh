#!/usr/bin/env bash
# Checks nodelet's deployment manifests, the kustomize configuration
# (config/) and the Helm chart (charts/nodelet):
#   1. config/default renders with kustomize, and its DaemonSets are the
#      chart's (hack/config-from-chart.sh --check);
#   2. the chart passes `helm lint --strict` and renders, with its defaults
#      and with the values that switch parts off; an empty node name suffix,
#      capacityFromPod without resources.requests or without CPU and
#      memory limits, the companion's pods at a system priority and no
#      runtime at all are refused, as are values its values.schema.json
#      refuses (each naming the value), Kubernetes versions outside its
#      kubeVersion and clusters that do not serve ValidatingAdmissionPolicy
#      (its fences); its approver runs two replicas under a
#      PodDisruptionBudget, its helm test pods are hooks, and its runtime
#      pod, which holds the companion's pods, is evictable and limited to
#      their share;
#   3. the chart's roles have the same rules as config/rbac/role.yaml and
#      config/approver/role.yaml (generated from the +kubebuilder:rbac
#      markers);
#   4. given a kubeconfig, the API server accepts both renderings
#      (`kubectl apply --dry-run=server --validate=strict`).
#
#   hack/check-manifests.sh [KUBECONFIG]
#
# The kubeconfig is the argument, or $KUBECONFIG; with neither, step 4 is
# skipped, and the script says so. Step 4 makes a scratch namespace for the
# dry run and deletes it afterwards.
#
# kubectl is $KUBECTL, else .cache/bin/kubectl, else the one on PATH. helm is
# built from hack/tools/helm into .cache/bin when missing or out of date
# (2 to 4 minutes cold on 2 cores). Needs python3 with PyYAML (Debian:
# python3-yaml) to compare the rules.
kubectl_from_env=${KUBECTL:-}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NAMESPACE=nodelet-system
RELEASE=nodelet
CHART_DIR=$REPO_ROOT/charts/nodelet
HELM=$BIN_DIR/helm
# The chart's kubeVersion refuses helm template's default (v1.20): render
# for the version the stack runs.
HELM_TEMPLATE=("$HELM" template --kube-version "$KUBE_VERSION")

if [[ -n $kubectl_from_env ]]; then
	KUBECTL=$kubectl_from_env
elif [[ -x $BIN_DIR/kubectl ]]; then
	KUBECTL=$BIN_DIR/kubectl
else
	KUBECTL=kubectl
fi

checked=()
ok() {
	checked+=("$*")
	log "ok: $*"
}

# ensure_helm links helm into .cache/bin, building it if the build cache
# has none of its version.
ensure_helm() {
	"$REPO_ROOT/hack/build-tools.sh" helm
}

# role_rules FILE KIND NAME prints the rules of the KIND (ClusterRole or
# Role) named NAME in the YAML stream FILE, normalised (lists and rules
# sorted) as JSON.
role_rules() {
	"$PYTHON" - "$1" "$2" "$3" <<'EOF'
import json, sys, yaml

path, kind, name = sys.argv[1:4]
with open(path) as f:
    roles = [d for d in yaml.safe_load_all(f)
             if d and d.get("kind") == kind and d.get("metadata", {}).get("name") == name]
if len(roles) != 1:
    sys.exit(f"{path}: want exactly one {kind} {name}, found {len(roles)}")
rules = [
    {key: sorted(value) if isinstance(value, list) else value for key, value in rule.items()}
    for rule in roles[0].get("rules") or []
]
rules.sort(key=lambda rule: json.dumps(rule, sort_keys=True))
print(json.dumps(rules, indent=1, sort_keys=True))
EOF
}

render() {
	log "Rendering config/default with $KUBECTL kustomize"
	"$KUBECTL" kustomize "$REPO_ROOT/config/default" >"$work/kustomize.yaml" ||
		die "kustomize could not render config/default"
	ok "config/default renders ($(grep -c '^kind:' "$work/kustomize.yaml") objects)"
	"$REPO_ROOT/hack/config-from-chart.sh" --check
	ok "config/'s DaemonSets and runtime configuration are the chart's (hack/config-from-chart.sh)"

	"$HELM" lint --strict "$CHART_DIR" >"$work/lint.log" 2>&1 || {
		cat "$work/lint.log" >&2
		die "helm lint failed for charts/nodelet"
	}
	ok "helm lint --strict charts/nodelet"

	"${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" --namespace "$NAMESPACE" >"$work/helm.yaml" ||
		die "helm could not render charts/nodelet with its default values"
	ok "charts/nodelet renders with its defaults ($(grep -c '^kind:' "$work/helm.yaml") objects)"
	# config/ runs the chart's default image (a release pins it by digest,
	# hack/release-manifests.sh), never an untagged or :latest one.
	local chart_images config_images
	chart_images=$(sed -n 's/^ *\(- \)\{0,1\}image: //p' "$work/helm.yaml" | sort -u)
	config_images=$(sed -n 's/^ *\(- \)\{0,1\}image: //p' "$work/kustomize.yaml" | sort -u)
	[[ $config_images == "$chart_images" ]] ||
		die "config/default runs $config_images, the chart $chart_images: give config/approver/deployment.yaml the chart's image"
	ok "config/default runs the chart's image, $chart_images"

	local variant
	for variant in \
		"rbac.create=false,serviceAccount.create=false,serviceAccount.name=existing" \
		"cni.agentMode.enabled=false,cni.podCIDR=10.1.0.0/24,maxPods=50" \
		"fullnameOverride=agent,image.tag=v9.9.9,extraArgs={--zap-devel}" \
		"approver.enabled=false,admissionPolicy.create=false,removeCompanions.enabled=false,drainCompanions.enabled=false" \
		"runtime.enabled=false,containerRuntime.endpoint=unix:///run/nodelet/containerd/containerd.sock" \
		"runtime.enabled=false,containerRuntime.endpoint=unix:///run/nodelet/containerd/containerd.sock,cni.agentMode.enabled=false" \
		"capacityFromPod=false,kubeReserved=,registerWithTaints=null,resources=null,ownAddress=192.0.2.10,labelsFromHost=false,hostRoot="; do
		"${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" --namespace "$NAMESPACE" --set "$variant" >/dev/null ||
			die "helm could not render charts/nodelet with --set $variant"
	done
	ok "charts/nodelet renders with the values that switch parts off or override names"

	refuses "an empty nodeName.suffix" "'/nodeName/suffix'" --set nodeName.suffix=
	refuses "no runtime in the pod and no containerRuntime.endpoint" "containerRuntime.endpoint must be set" --set runtime.enabled=false
	refuses "capacityFromPod without the requests that are its capacity" "resources.requests.cpu" --set resources.requests=null
	refuses "capacityFromPod without the limits that hold the companion's pods" "resources.limits.cpu and resources.limits.memory must be set" --set resources.limits.cpu=null
	refuses "the companion's pods in a pod the host's kubelet never evicts" "runtime.priorityClass.name: \"system-node-critical\" is a system priority" --set runtime.priorityClass.name=system-node-critical
	# values.schema.json: a bad value, or a name the chart does not read,
	# fails naming it.
	refuses "a port that is not a number" "'/daemonPort': got string, want integer" --set daemonPort=abc
	refuses "a misspelt value" "'/approver': additional properties 'replcas' not allowed" --set approver.replcas=2
	refuses "a bridge name longer than Linux takes" "'/cni/bridge': maxLength" --set cni.bridge=nodelet-companion0
	refuses "a relative host folder" "'/paths/rootDir'" --set paths.rootDir=var/lib/nodelet
	refuses "an image digest that is not sha256:<64 hex>" "'/image/digest'" --set image.digest=sha256:abc
	# image.digest: every container runs repository@digest, the tag
	# ignored.
	local digest=sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef images
	images=$("${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" --set image.digest=$digest,image.tag=v9.9.9 | sed -n 's/^ *\(- \)\{0,1\}image: //p' | sort -u)
	[[ $images == "ghcr.io/nodelet/nodelet@$digest" ]] ||
		die "charts/nodelet with image.digest runs $images, want only ghcr.io/nodelet/nodelet@$digest"
	ok "charts/nodelet with image.digest runs its image by digest alone"
	# kubeVersion: the API servers a kubelet v1.36 may talk to.
	refuses "an API server older than nodelet's Kubernetes version" "requires kubeVersion" --kube-version v1.35.9
	refuses "an API server more than three minor versions newer" "requires kubeVersion" --kube-version v1.40.0
	"$HELM" template "$RELEASE" "$CHART_DIR" --kube-version v1.39.2 >/dev/null ||
		die "charts/nodelet refused Kubernetes v1.39.2, which its kubeVersion should take"
	ok "charts/nodelet takes Kubernetes v1.36 to v1.39"
	# The fences are ValidatingAdmissionPolicies: a cluster whose discovery
	# (v1/Pod: helm asked one) has no such kinds is refused, naming them;
	# one that has them, or admissionPolicy.create=false, is not.
	local vap=admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy
	refuses "a cluster that does not serve ValidatingAdmissionPolicy" "does not serve ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding in admissionregistration.k8s.io/v1" --api-versions v1/Pod
	"${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" --api-versions v1/Pod --api-versions "$vap" --api-versions "${vap}Binding" >/dev/null ||
		die "charts/nodelet refused a cluster that serves ValidatingAdmissionPolicy"
	"${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" --api-versions v1/Pod --set admissionPolicy.create=false >/dev/null ||
		die "charts/nodelet refused a cluster without ValidatingAdmissionPolicy with admissionPolicy.create=false"
	ok "charts/nodelet installs where the cluster serves ValidatingAdmissionPolicy, or without its fences"
	refuses "fences that cannot tell nodelet's pods" "must be nodelet's own" --set serviceAccount.create=false
	check_approver_and_tests
	check_runtime_revision
	check_tenant_share
}

# runtime_revision [--set VALUES] prints the runtime revision the chart
# renders, failing unless nodelet's --runtime-revision and the runtime
# pod's annotation, which its start script records, are the same.
runtime_revision() {
	"${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" --namespace "$NAMESPACE" "$@" | "$PYTHON" -c '
import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d and d.get("kind") == "DaemonSet"]
agent = [a for d in docs for a in d["spec"]["template"]["spec"]["containers"][0].get("args", []) if a.startswith("--runtime-revision=")]
runtime = [d["spec"]["template"]["metadata"]["annotations"]["nodelet.dev/runtime-revision"] for d in docs if d["metadata"]["name"].endswith("-runtime")]
if len(agent) != 1 or runtime != [agent[0].split("=", 1)[1]]:
    sys.exit(f"nodelet wants runtime revision {agent}, the runtime pod records {runtime}")
print(runtime[0])'
}

# check_runtime_revision: the revision nodelet compares with the runtime's
# record changes in the part a value changes, and not at all for a value
# of nodelet's alone, so that RuntimeOutOfDate says what a helm upgrade
# changed.
check_runtime_revision() {
	local base variant want got
	base=$(runtime_revision) || die "the chart's runtime revisions differ"
	for variant in image.tag=v9.9.9:image runtime.sandboxImage=pause:9:config runtime.logLevel=debug:pod \
		logLevel=debug: nodeName.suffix=-companion: podLabels.team=a:; do
		want=${variant##*:}
		got=$(runtime_revision --set "${variant%:*}") || die "the chart's runtime revisions differ with --set ${variant%:*}"
		got=$("$PYTHON" -c 'import sys; a, b = (dict(p.split("=", 1) for p in r.split(",")) for r in sys.argv[1:]); print(",".join(k for k in a if a[k] != b[k]))' "$base" "$got")
		[[ $got == "$want" ]] || die "--set ${variant%:*} changes the runtime revision's '$got', want '$want'"
	done
	ok "nodelet's --runtime-revision is the runtime pod's; a value changes the runtime revision's image, config or pod, or nothing for nodelet's own"
}

# check_tenant_share checks the default rendering's runtime pod, whose
# cgroup holds the companion's pods: of the chart's own PriorityClass,
# below the system ones the host's kubelet never evicts, and with CPU and
# memory limits equal to its requests (the companion's capacity).
check_tenant_share() {
	"$PYTHON" - "$work/helm.yaml" "$RELEASE" <<'EOF' || die "the chart's runtime pod is not evictable, or not limited to the companion's share"
import sys, yaml

path, release = sys.argv[1:3]
with open(path) as f:
    docs = [d for d in yaml.safe_load_all(f) if d]
def one(kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    if len(found) != 1:
        sys.exit(f"want one {kind} {name}, found {len(found)}")
    return found[0]
spec = one("DaemonSet", release + "-runtime")["spec"]["template"]["spec"]
name = spec.get("priorityClassName", "")
value = one("PriorityClass", name)["value"]
if value >= 2000000000:
    sys.exit(f"the runtime pod's PriorityClass {name} has value {value}: a system priority, never evicted")
resources = spec["containers"][0]["resources"]
for resource in ("cpu", "memory"):
    if resources.get("limits", {}).get(resource) != resources["requests"][resource]:
        sys.exit(f"the runtime pod's {resource} limit is {resources.get('limits', {}).get(resource)}, want its request {resources['requests'][resource]}")
EOF
	ok "charts/nodelet's runtime pod is evictable (its own PriorityClass) and limited to the companion's share"
}

# refuses WHAT WANT ARGS... fails unless rendering the chart with ARGS
# fails with an error holding WANT: refused, and for that reason.
refuses() {
	local what=$1 want=$2 out
	shift 2
	if out=$("${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" "$@" 2>&1 >/dev/null); then
		die "charts/nodelet rendered with $*; it must refuse $what"
	fi
	[[ $out == *"$want"* ]] || die "charts/nodelet refused $* without saying $want: $out"
	ok "charts/nodelet refuses $what ($*), saying $want"
}

# check_approver_and_tests checks the default rendering: no key twice in
# a mapping, two approver replicas under a PodDisruptionBudget that
# selects them, and the helm test pods (a Ready check, then a pod on a
# companion).
check_approver_and_tests() {
	"$PYTHON" - "$work/helm.yaml" "$RELEASE" <<'EOF' || die "the chart's approver or helm test pods are not as they should be"
import sys, yaml

path, release = sys.argv[1:3]

# A key given twice in one mapping is refused by the API server's strict
# decoding, and silently the last one here: refuse it.
class Loader(yaml.SafeLoader):
    pass
def mapping(loader, node):
    keys = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in keys:
            sys.exit(f"{path}: {key} given twice in one mapping (line {key_node.start_mark.line + 1})")
        keys.add(key)
    return loader.construct_mapping(node)
Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)

with open(path) as f:
    docs = [d for d in yaml.load_all(f, Loader=Loader) if d]
def one(kind, name):
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    if len(found) != 1:
        sys.exit(f"want one {kind} {name}, found {len(found)}")
    return found[0]
approver = one("Deployment", release + "-approver")
if approver["spec"]["replicas"] != 2:
    sys.exit(f"the approver runs {approver['spec']['replicas']} replicas, want 2")
pdb = one("PodDisruptionBudget", release + "-approver")
if pdb["spec"].get("maxUnavailable") != 1 or pdb["spec"]["selector"] != approver["spec"]["selector"]:
    sys.exit(f"the approver's PodDisruptionBudget is {pdb['spec']}, want maxUnavailable 1 over {approver['spec']['selector']}")
ready = one("Pod", release + "-test-ready")
pod = one("Pod", release + "-test-pod")
for test in (ready, pod):
    if test["metadata"]["annotations"].get("helm.sh/hook") != "test":
        sys.exit(f"{test['metadata']['name']} is not a helm test hook")
if "check-companions" not in ready["spec"]["containers"][0]["command"]:
    sys.exit(f"{ready['metadata']['name']} does not run check-companions")
if pod["spec"].get("nodeSelector", {}).get("nodelet.dev/release") != release:
    sys.exit(f"{pod['metadata']['name']} is not placed on the release's companions")
EOF
	ok "charts/nodelet runs two approver replicas under a PodDisruptionBudget, and has a helm test"
}

# compare_role KIND GENERATED NAME CHART_TEMPLATE CHART_NAME fails unless the
# chart's role has the generated one's rules.
compare_role() {
	local kind=$1 generated=$2 name=$3 template=$4 chart_name=$5
	role_rules "$REPO_ROOT/$generated" "$kind" "$name" >"$work/role.rules.json"
	role_rules "$work/helm.yaml" "$kind" "$chart_name" >"$work/chart.rules.json"
	if ! diff -u --label "$generated" --label "charts/nodelet/templates/$template" \
		"$work/role.rules.json" "$work/chart.rules.json" >&2; then
		die "the chart's $kind $chart_name differs from $generated (generated from the +kubebuilder:rbac markers): copy the rules into charts/nodelet/templates/$template"
	fi
	ok "the chart's $kind $chart_name has the rules of $generated ($kind $name)"
}

compare_roles() {
	compare_role ClusterRole config/rbac/role.yaml agent clusterrole.yaml "$RELEASE"
	compare_role ClusterRole config/approver/role.yaml approver approver.yaml "$RELEASE-approver"
	compare_role Role config/approver/role.yaml approver approver.yaml "$RELEASE-approver"
}

# dry_run KUBECONFIG has the API server validate and admit both renderings
# without storing them. A dry run of a namespaced object needs its namespace
# to exist, so both are rendered again into a scratch namespace made for
# this run (kustomize through an overlay of config/default) and deleted
# afterwards. A fresh name each run: a deleted namespace stays Terminating
# for a while, and forever on a server without a namespace controller.
dry_run() {
	# As an environment variable, so a KUBECONFIG list works too.
	export KUBECONFIG=$1
	"$KUBECTL" get --raw /readyz >/dev/null || die "the API server of KUBECONFIG=$KUBECONFIG is not ready"

	local namespace
	namespace=nodelet-manifests-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	"$KUBECTL" create namespace "$namespace" >/dev/null
	scratch_namespace=$namespace
	"$KUBECTL" label namespace "$namespace" pod-security.kubernetes.io/enforce=privileged >/dev/null

	mkdir "$work/overlay"
	printf 'namespace: %s\nresources:\n- %s\n' "$namespace" \
		"$(realpath --relative-to="$work/overlay" "$REPO_ROOT/config/default")" >"$work/overlay/kustomization.yaml"
	"$KUBECTL" kustomize "$work/overlay" >"$work/kustomize.dry-run.yaml"
	# Without the helm test pods: the ServiceAccount they run as is not
	# stored by a dry run, and a pod's admission looks it up.
	"${HELM_TEMPLATE[@]}" "$RELEASE" "$CHART_DIR" --namespace "$namespace" --skip-tests >"$work/helm.dry-run.yaml"

	local name
	for name in kustomize helm; do
		"$KUBECTL" apply --dry-run=server --validate=strict -f "$work/$name.dry-run.yaml" >"$work/$name.apply.log" 2>&1 || {
			cat "$work/$name.apply.log" >&2
			die "the API server refused the $name rendering (in the scratch namespace $namespace)"
		}
		ok "the API server accepts the $name rendering ($(grep -c "(server dry run)" "$work/$name.apply.log") objects, server-side dry run)"
	done
}

cleanup() {
	if [[ -n ${scratch_namespace:-} ]]; then
		"$KUBECTL" delete namespace "$scratch_namespace" --wait=false >/dev/null 2>&1 ||
			log "Could not delete the scratch namespace $scratch_namespace"
	fi
	rm -rf "$work"
}

main() {
	local kubeconfig=${1:-${KUBECONFIG:-}}
	command -v "$KUBECTL" >/dev/null || die "no kubectl ($KUBECTL)"
	local python
	for python in python3 /usr/bin/python3; do
		if "$python" -c 'import yaml' 2>/dev/null; then
			PYTHON=$python
			break
		fi
	done
	[[ -n ${PYTHON:-} ]] || die "python3 with PyYAML is needed (Debian: python3-yaml)"
	work=$(mktemp -d)
	trap cleanup EXIT

	ensure_helm
	render
	compare_roles
	if [[ -n $kubeconfig ]]; then
		dry_run "$kubeconfig"
	else
		log "SKIPPED: the server-side dry run (no kubeconfig given, KUBECONFIG unset)"
	fi

	log "Manifests checked:"
	printf '  - %s\n' "${checked[@]}" >&2
}

main "$@"
