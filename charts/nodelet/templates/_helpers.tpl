{{/*
The chart's name, overridable with nameOverride.
*/}}
{{- define "nodelet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: the release name, with the chart's name
appended unless the release name already holds it. Cut to 63 characters,
the limit of a label value.
*/}}
{{- define "nodelet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nodelet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "nodelet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nodelet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end }}

{{- define "nodelet.labels" -}}
helm.sh/chart: {{ include "nodelet.chart" . }}
{{ include "nodelet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodelet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "nodelet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image: repository@digest when image.digest is set (the tag is then
ignored), else repository:tag, the tag defaulting to the appVersion.
*/}}
{{- define "nodelet.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
The CRI endpoint nodelet talks to: containerRuntime.endpoint, else the
socket of the runtime the pod brings.
*/}}
{{- define "nodelet.runtimeEndpoint" -}}
{{- if .Values.containerRuntime.endpoint }}
{{- .Values.containerRuntime.endpoint }}
{{- else if .Values.runtime.enabled }}
{{- printf "unix://%s/containerd.sock" (clean .Values.runtime.stateDir) }}
{{- else }}
{{- fail "containerRuntime.endpoint must be set when the pod brings no runtime (runtime.enabled=false)" }}
{{- end }}
{{- end }}

{{/*
The folder of the runtime's unix socket, which the DaemonSet mounts.
*/}}
{{- define "nodelet.runtimeSocketDir" -}}
{{- $endpoint := include "nodelet.runtimeEndpoint" . }}
{{- if not (hasPrefix "unix:///" $endpoint) }}
{{- fail (printf "containerRuntime.endpoint must be a unix socket (unix:///path), got %q" $endpoint) }}
{{- end }}
{{- dir (trimPrefix "unix://" $endpoint) }}
{{- end }}

{{/*
The suffix of the companion Node's name. Empty would make nodelet claim the
node its own kubelet runs.
*/}}
{{- define "nodelet.nodeNameSuffix" -}}
{{- if not .Values.nodeName.suffix }}
{{- fail "nodeName.suffix must not be empty: the node's own name belongs to the kubelet that runs the nodelet pod, and two agents must never own one node" }}
{{- end }}
{{- .Values.nodeName.suffix }}
{{- end }}

{{/*
The values' affinity with one rule added to every required node selector
term (terms are ORed, so it must be in each): never run on a Node that
nodelet registered itself, which carries the label nodelet.dev/agent.
*/}}
{{- define "nodelet.affinity" -}}
{{- $affinity := deepCopy (.Values.affinity | default dict) }}
{{- $nodeAffinity := $affinity.nodeAffinity | default dict }}
{{- $required := $nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution | default dict }}
{{- $terms := list }}
{{- range ($required.nodeSelectorTerms | default (list dict)) }}
{{- $expressions := append (.matchExpressions | default list) (dict "key" "nodelet.dev/agent" "operator" "DoesNotExist") }}
{{- $terms = append $terms (set (deepCopy .) "matchExpressions" $expressions) }}
{{- end }}
{{- $_ := set $required "nodeSelectorTerms" $terms }}
{{- $_ = set $nodeAffinity "requiredDuringSchedulingIgnoredDuringExecution" $required }}
{{- $_ = set $affinity "nodeAffinity" $nodeAffinity }}
{{- toYaml $affinity }}
{{- end }}

{{/*
The revision of the runtime the release wants, which the runtime's pod
records as it starts and nodelet compares with it (--runtime-revision):
the runtime container's image, and checksums of the runtime's
configuration (the ConfigMap's data, not its labels, which name the
chart's version) and of the rest of its pod's spec (but for the image and
the ConfigMap's name, which the first two say). A value of the
release that changes none of them (nodelet's own settings, pod labels)
leaves the runtime up to date.
*/}}
{{- define "nodelet.runtimeRevision" -}}
{{- $image := include "nodelet.image" . }}
{{- $config := include "nodelet.runtimeConfigData" . | sha256sum | trunc 16 }}
{{- $pod := include "nodelet.runtimePodSpec" . | replace $image "" | replace (include "nodelet.runtimeConfigName" .) "" | sha256sum | trunc 16 }}
{{- printf "image=%s,config=%s,pod=%s" $image $config $pod }}
{{- end }}

{{/*
The runtime's ConfigMap, named after its data.
*/}}
{{- define "nodelet.runtimeConfigName" -}}
{{- printf "%s-runtime-%s" (include "nodelet.fullname" .) (include "nodelet.runtimeConfigData" . | sha256sum | trunc 10) }}
{{- end }}

{{- define "nodelet.runtimeSelectorLabels" -}}
app.kubernetes.io/name: {{ include "nodelet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: runtime
{{- end }}

{{- define "nodelet.runtimeLabels" -}}
helm.sh/chart: {{ include "nodelet.chart" . }}
{{ include "nodelet.runtimeSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The host folders of the CNI configuration and plugins the runtime's pod and
nodelet's share, under the runtime's state folder (cleared on reboot:
nodelet writes the conflist again, its pod's init container the plugins).
*/}}
{{- define "nodelet.runtimeCNIDir" -}}
{{- printf "%s/nodelet-cni" (clean .Values.runtime.stateDir) }}
{{- end }}

{{- define "nodelet.approverSelectorLabels" -}}
app.kubernetes.io/name: {{ include "nodelet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: approver
{{- end }}

{{- define "nodelet.approverLabels" -}}
helm.sh/chart: {{ include "nodelet.chart" . }}
{{ include "nodelet.approverSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodelet.removeCompanionsSelectorLabels" -}}
app.kubernetes.io/name: {{ include "nodelet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: remove-companions
{{- end }}

{{- define "nodelet.removeCompanionsLabels" -}}
helm.sh/chart: {{ include "nodelet.chart" . }}
{{ include "nodelet.removeCompanionsSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "nodelet.drainCompanionsSelectorLabels" -}}
app.kubernetes.io/name: {{ include "nodelet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: drain-companions
{{- end }}

{{- define "nodelet.drainCompanionsLabels" -}}
helm.sh/chart: {{ include "nodelet.chart" . }}
{{ include "nodelet.drainCompanionsSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The labels nodelet gives the release's companion Nodes (--node-labels),
by which the post-delete hook finds them.
*/}}
{{- define "nodelet.companionNodeLabels" -}}
nodelet.dev/release: {{ .Release.Name }}
nodelet.dev/release-namespace: {{ .Release.Namespace }}
{{- end }}

{{/*
A map of labels as key=value pairs, comma separated, sorted: a label
selector, or a --node-labels value.
*/}}
{{- define "nodelet.selector" -}}
{{- $pairs := list }}
{{- range $key, $value := . }}
{{- $pairs = append $pairs (printf "%s=%s" $key $value) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/*
The fences (admission-policy.yaml, companion-fences.yaml) are
ValidatingAdmissionPolicies, admissionregistration.k8s.io/v1 (Kubernetes
1.30 and later, unless the API server has them switched off): without
them nothing but NodeRestriction, which nothing checks is on, would keep
a companion to its own Node and pods. A cluster's discovery names each
API's kinds (v1/Pod); `helm template` without a cluster knows groups
only, and renders.
*/}}
{{- define "nodelet.requireAdmissionPolicies" -}}
{{- $apis := .Capabilities.APIVersions }}
{{- if and ($apis.Has "v1/Pod") (not (and ($apis.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy") ($apis.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding"))) }}
{{- fail "admissionPolicy.create: this cluster does not serve ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding in admissionregistration.k8s.io/v1, which the chart's fences are (they keep each companion to its own Node, Lease, CSINode and pods, and the release's ServiceAccounts to its own pods, whether or not NodeRestriction is on); enable that API (Kubernetes 1.30 or later), or set admissionPolicy.create=false to install without the fences" }}
{{- end }}
{{- end }}

{{/*
The PriorityClass of the pod whose cgroup holds the companion's pods (the
runtime's, or nodelet's own without runtime.enabled): runtime.priorityClass.name,
else the chart's own. Never a system-* class: the host's kubelet never
evicts a pod of system-node-critical or system-cluster-critical priority,
and the companion's pods would then be out of its eviction's reach.
*/}}
{{- define "nodelet.tenantPriorityClassName" -}}
{{- $name := .Values.runtime.priorityClass.name }}
{{- if hasPrefix "system-" $name }}
{{- fail (printf "runtime.priorityClass.name: %q is a system priority, which the host's kubelet never evicts; the pod holding the companion's pods must be evictable: name a lower PriorityClass, or leave it empty for the chart's own" $name) }}
{{- end }}
{{- default (printf "%s-runtime" (include "nodelet.fullname" .)) $name }}
{{- end }}
