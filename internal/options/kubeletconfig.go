package options

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

// The kubelet's configuration file, which --config and --config-dir take
// besides nodelet's own: where nodelet stands in for the kubelet, kubeadm
// and distributions' units hand it the kubelet's file.
const (
	kubeletAPIVersion = "kubelet.config.k8s.io/v1beta1"
	kubeletKind       = "KubeletConfiguration"
)

// unsupportedField is a field of the kubelet's file that nodelet does not
// implement: a file may hold it only at the kubelet's default (or unset,
// a zero value, which the kubelet's defaulting takes as unset too).
type unsupportedField struct {
	// accepted is the one value taken, as the file writes it (compared as
	// JSON); nil is unset alone.
	accepted any
	// why, when given, replaces "the kubelet's default ... is" in the
	// error: why nodelet takes the value it takes.
	why string
}

// unsupportedKubeletFields are the fields of the kubelet's
// KubeletConfiguration (kubelet.config.k8s.io/v1beta1) nodelet does not
// implement, by their dotted path in the file, each with the value it
// accepts, the kubelet's default. Every other field of the kubelet's file
// is carried onto NodeletConfiguration: by its name when nodelet has a
// field of the same path and type (carriedKubeletFields finds them), or
// as mappedKubeletFields says. TestEveryKubeletFieldIsCarriedOrRefused
// checks that every field of the upstream type is one or the other.
//
// A field nodelet comes to implement, with the kubelet's name and type,
// is carried from then on: take it out of this table (the test says so).
var unsupportedKubeletFields = map[string]unsupportedField{
	// The node's API and its clients.
	"enableServer":                   {accepted: true},
	"readOnlyPort":                   {},
	"tlsCipherSuites":                {},
	"tlsCurvePreferences":            {},
	"tlsMinVersion":                  {},
	"enableDebuggingHandlers":        {accepted: true},
	"enableContentionProfiling":      {},
	"enableProfilingHandler":         {accepted: true},
	"enableDebugFlagsHandler":        {accepted: true},
	"streamingConnectionIdleTimeout": {accepted: "4h0m0s"},
	"eventRecordQPS":                 {accepted: 50},
	"eventBurst":                     {accepted: 100},
	"contentType":                    {accepted: "application/vnd.kubernetes.protobuf"},
	"providerID":                     {why: "nodelet does not set the Node's spec.providerID yet"},
	"registerNode":                   {accepted: true},
	"nodeStatusReportFrequency":      {accepted: "5m0s"},
	"nodeStatusMaxImages":            {accepted: 50},
	"nodeLeaseDurationSeconds":       {accepted: 40},
	"syncFrequency":                  {accepted: "1m0s"},
	"runOnce":                        {},
	"showHiddenMetricsForVersion":    {},
	"tracing.endpoint":               {},
	"tracing.samplingRatePerMillion": {},

	// Images.
	"registryPullQPS":                        {accepted: 5},
	"registryBurst":                          {accepted: 10},
	"serializeImagePulls":                    {accepted: true},
	"maxParallelImagePulls":                  {},
	"imagePullCredentialsVerificationPolicy": {accepted: "NeverVerifyPreloadedImages"},
	"preloadedImagesVerificationAllowlist":   {},
	"imageServiceEndpoint":                   {why: "nodelet pulls images through containerRuntimeEndpoint"},

	// Resource managers and cgroups.
	"kubeletCgroups":                {why: "nodelet does not move itself into a cgroup"},
	"systemCgroups":                 {},
	"cgroupsPerQOS":                 {accepted: true},
	"cpuManagerPolicy":              {accepted: "none"},
	"cpuManagerPolicyOptions":       {},
	"cpuManagerReconcilePeriod":     {accepted: "10s"},
	"memoryManagerPolicy":           {accepted: "None"},
	"topologyManagerPolicy":         {accepted: "none"},
	"topologyManagerScope":          {accepted: "container"},
	"topologyManagerPolicyOptions":  {},
	"qosReserved":                   {},
	"reservedSystemCPUs":            {},
	"reservedMemory":                {},
	"seccompDefault":                {accepted: false},
	"singleProcessOOMKill":          {accepted: false},
	"cpuCFSQuota":                   {accepted: true},
	"cpuCFSQuotaPeriod":             {accepted: "100ms"},
	"memoryThrottlingFactor":        {accepted: 0.9},
	"memoryReservationPolicy":       {accepted: "None"},
	"podsPerCore":                   {},
	"oomScoreAdj":                   {accepted: -999},
	"maxOpenFiles":                  {accepted: 1000000},
	"protectKernelDefaults":         {},
	"kernelMemcgNotification":       {},
	"failCgroupV1":                  {accepted: true},
	"failSwapOn":                    {accepted: false, why: "nodelet does not check the node's swap, as the kubelet with failSwapOn false"},
	"memorySwap.swapBehavior":       {accepted: "NoSwap"},
	"localStorageCapacityIsolation": {accepted: true},
	"mergeDefaultEvictionSettings":  {accepted: false},
	"userNamespaces.idsPerPod":      {accepted: 65536},

	// Networking, volumes and the rest.
	"hairpinMode":                                {accepted: "promiscuous-bridge"},
	"makeIPTablesUtilChains":                     {accepted: true},
	"iptablesMasqueradeBit":                      {accepted: 14},
	"iptablesDropBit":                            {accepted: 15},
	"defaultPodSysctls":                          {},
	"enableControllerAttachDetach":               {accepted: true},
	"volumePluginDir":                            {accepted: "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"},
	"configMapAndSecretChangeDetectionStrategy":  {accepted: "Watch"},
	"containerLogMaxWorkers":                     {accepted: 1},
	"crashLoopBackOff.maxContainerRestartPeriod": {accepted: "5m0s"},

	// The kubelet's logger: nodelet's is set by its flags (--v,
	// --logging-format, --zap-*).
	"logging.format":                      {accepted: "text"},
	"logging.flushFrequency":              {accepted: "5s"},
	"logging.verbosity":                   {},
	"logging.vmodule":                     {},
	"logging.options.text.splitStream":    {},
	"logging.options.text.infoBufferSize": {},
	"logging.options.json.splitStream":    {},
	"logging.options.json.infoBufferSize": {},
}

// mappedKubeletFields are the fields of the kubelet's file nodelet
// implements under another name or with a check of its own.
var mappedKubeletFields = map[string]string{
	// The serving certificate requested through the certificates API.
	"serverTLSBootstrap": "rotateServerCertificates",
	// nodelet renews the client certificate it requested itself, through
	// --bootstrap-kubeconfig or --node-identity=csr, as the kubelet with
	// rotateCertificates (which kubeadm writes): nothing to carry.
	"rotateCertificates": "",
	// Checked gate by gate (checkFeatureGate).
	"featureGates": "",
}

// kubeletDefaults sets, in a configuration read from the kubelet's file,
// the kubelet's defaults where they are not nodelet's: the one place
// those differences are written. Fields it leaves unset take nodelet's
// defaults (SetDefaults), which are the kubelet's for every field both
// have (TestKubeletDefaultsAreTheKubelets).
func kubeletDefaults(c *configv1alpha1.NodeletConfiguration) {
	// The kubelet's --root-dir; CertDir, <rootDir>/pki, follows it.
	if c.RootDir == "" {
		c.RootDir = "/var/lib/kubelet"
	}
	// The kubelet's healthz, which kubeadm polls.
	if c.HealthzBindAddress == "" {
		c.HealthzBindAddress = "127.0.0.1"
	}
	if c.HealthzPort == nil {
		c.HealthzPort = ptr.To[int32](10248)
	}
	// The kubelet's cgroupRoot "" is the root: kubepods at the top.
	if c.CgroupRoot == "" {
		c.CgroupRoot = "/"
	}
}

// decodeKubeletConfig reads the kubelet's configuration file, as JSON, as
// the fields of a NodeletConfiguration it sets: strictly (an unknown field
// or a value of the wrong type is an error naming it), and refusing by
// name a field nodelet does not implement set to other than the
// kubelet's default.
func decodeKubeletConfig(js []byte) (map[string]any, error) {
	kc := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := configv1alpha1.UnmarshalStrict(js, kc); err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	carried := carriedKubeletFields()
	out := map[string]any{}
	for _, leaf := range leaves(reflect.ValueOf(kc).Elem(), "") {
		if carried[leaf.path] {
			if v, ok := lookupPath(doc, leaf.path); ok {
				setPath(out, leaf.path, v)
			}
			continue
		}
		if to, mapped := mappedKubeletFields[leaf.path]; mapped {
			if to != "" {
				if v, ok := lookupPath(doc, leaf.path); ok {
					setPath(out, to, v)
				}
			}
			continue
		}
		if isUnset(leaf.value) {
			continue
		}
		field, known := unsupportedKubeletFields[leaf.path]
		if !known {
			// A field of a newer upstream type than the table knows.
			return nil, fmt.Errorf("field %q is not supported by nodelet", leaf.path)
		}
		if err := field.check(leaf.path, leaf.value); err != nil {
			return nil, err
		}
	}
	for gate, enabled := range kc.FeatureGates {
		if err := checkFeatureGate(gate, enabled); err != nil {
			return nil, fmt.Errorf("field \"featureGates\": %w", err)
		}
	}
	return out, nil
}

// check refuses a value other than the accepted one.
func (f unsupportedField) check(path string, v reflect.Value) error {
	got, err := json.Marshal(v.Interface())
	if err != nil {
		return fmt.Errorf("field %q: %w", path, err)
	}
	// The logger's flushFrequency, written as a duration or as
	// nanoseconds, is compared as the duration it holds.
	if v.Kind() == reflect.Struct {
		if d := v.FieldByName("Duration"); d.IsValid() && d.Type() == durationType {
			got, _ = json.Marshal(d.Interface())
		}
	}
	want, _ := json.Marshal(f.accepted)
	if f.accepted != nil && string(got) == string(want) {
		return nil
	}
	reason := f.why
	switch {
	case reason != "":
	case f.accepted == nil:
		reason = "only the kubelet's default, unset, is"
	default:
		reason = fmt.Sprintf("the kubelet's default %s is", want)
	}
	return fmt.Errorf("field %q: %s is not supported by nodelet (%s)", path, got, reason)
}

// isUnset is whether a value is one the kubelet's defaulting takes as
// unset: a zero value, or an empty list or map.
func isUnset(v reflect.Value) bool {
	// Quantities know their zero; their pointer has the method.
	if v.Kind() == reflect.Struct && v.CanAddr() {
		if z, ok := v.Addr().Interface().(interface{ IsZero() bool }); ok {
			return z.IsZero()
		}
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Pointer:
		return v.IsNil()
	}
	return v.IsZero()
}

// carriedKubeletFields are the paths of the kubelet's file that nodelet's
// has too, with the same type (a pointer and its value count as one):
// carried by name.
func carriedKubeletFields() map[string]bool {
	nodelet := map[string]reflect.Type{}
	for _, leaf := range leaves(reflect.ValueOf(&configv1alpha1.NodeletConfiguration{}).Elem(), "") {
		nodelet[leaf.path] = deref(leaf.value.Type())
	}
	carried := map[string]bool{}
	for _, leaf := range leaves(reflect.ValueOf(&kubeletconfigv1beta1.KubeletConfiguration{}).Elem(), "") {
		if t, ok := nodelet[leaf.path]; ok && sameType(t, deref(leaf.value.Type())) {
			carried[leaf.path] = true
		}
	}
	return carried
}

// sameType is whether the file writes values of the two types alike: the
// same type, a named string (the kubelet's KubeletAuthorizationMode) and a
// string, or lists of structs with the same json fields (the kubelet's
// ShutdownGracePeriodByPodPriority and nodelet's).
func sameType(a, b reflect.Type) bool {
	switch {
	case a == b:
		return true
	case a.Kind() != b.Kind():
		return false
	case a.Kind() == reflect.String:
		return true
	case a.Kind() == reflect.Slice:
		return sameType(a.Elem(), b.Elem())
	case a.Kind() == reflect.Struct:
		return sameFields(a, b)
	}
	return false
}

// sameFields is whether two structs have the same json fields, each of
// the same type.
func sameFields(a, b reflect.Type) bool {
	fields := func(t reflect.Type) map[string]reflect.Type {
		byName := map[string]reflect.Type{}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			byName[name] = t.Field(i).Type
		}
		return byName
	}
	fa, fb := fields(a), fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for name, t := range fa {
		if u, ok := fb[name]; !ok || !sameType(t, u) {
			return false
		}
	}
	return true
}

func deref(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// leaf is one value of a configuration file: a field that is not a group
// of fields.
type leaf struct {
	path  string
	value reflect.Value
}

var (
	typeMetaType  = reflect.TypeFor[metav1.TypeMeta]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// leaves are the values of the struct v, by their dotted json paths: a
// struct (or a pointer to one, nil taken as its zero value) is walked
// into unless it writes itself as JSON (durations, quantities); inline
// fields keep their parent's path. The file's TypeMeta is no value.
func leaves(v reflect.Value, prefix string) []leaf {
	var all []leaf
	for i := range v.NumField() {
		field := v.Type().Field(i)
		if field.Type == typeMetaType || !field.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		path := prefix + name
		if name == "" {
			path = strings.TrimSuffix(prefix, ".")
		}
		fv := v.Field(i)
		t := field.Type
		if t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && !t.Implements(marshalerType) {
			if fv.IsNil() {
				fv = reflect.New(t.Elem()).Elem()
			} else {
				fv = fv.Elem()
			}
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(marshalerType) && !t.Implements(marshalerType) {
			sub := path + "."
			if path == "" {
				sub = ""
			}
			all = append(all, leaves(fv, sub)...)
			continue
		}
		all = append(all, leaf{path: path, value: v.Field(i)})
	}
	return all
}

// lookupPath finds the value at a dotted path of a JSON document.
func lookupPath(doc map[string]any, path string) (any, bool) {
	parts := strings.Split(path, ".")
	var cur any = doc
	for _, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// setPath puts a value at a dotted path of a JSON document.
func setPath(doc map[string]any, path string, value any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := doc[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[p] = next
		}
		doc = next
	}
	doc[parts[len(parts)-1]] = value
}

// sortedUnsupported are the table's paths in order, for the reference.
func sortedUnsupported() []string {
	paths := make([]string, 0, len(unsupportedKubeletFields))
	for p := range unsupportedKubeletFields {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}
