package options

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
)

// referencePath is the committed reference, from this package's folder.
const referencePath = "../../docs/configuration.md"

// zeroDefaults are the configuration's fields whose zero value is their
// default, which SetDefaults therefore leaves alone; every other field
// must be set by it.
var zeroDefaults = map[string]string{
	"ClusterDNS":                       "no cluster DNS: pods resolve as the host does",
	"ClusterDomain":                    "no cluster domain to search",
	"AllowedUnsafeSysctls":             "only the safe sysctls",
	"PodCIDR":                          "the Node's spec.podCIDRs",
	"CNIAgentConfDir":                  "<rootDir>/cni/net.d, which depends on rootDir",
	"CNIShimPath":                      "nodelet-cni beside nodelet's binary, which depends on the binary",
	"ParallelSandboxStarts":            "two per CPU, which depends on the machine",
	"RegisterWithTaints":               "no taints, as the kubelet's",
	"StaticPodPath":                    "no static pods from files, as the kubelet's",
	"StaticPodURL":                     "no static pods from a URL, as the kubelet's",
	"StaticPodURLHeader":               "no headers, as the kubelet's",
	"SystemReserved":                   "nothing reserved, as the kubelet's",
	"KubeReserved":                     "nothing reserved, as the kubelet's",
	"EvictionSoft":                     "no soft thresholds, as the kubelet's",
	"EvictionSoftGracePeriod":          "no soft thresholds to wait for",
	"EvictionMinimumReclaim":           "no minimum reclaim, as the kubelet's",
	"EvictionMaxPodGracePeriod":        "the kubelet's 0",
	"SystemReservedCgroup":             "required only with its enforcement level",
	"KubeReservedCgroup":               "required only with its enforcement level",
	"ImageMaximumGCAge":                "no maximum age, as the kubelet's",
	"TLSCertFile":                      "a self-signed or requested certificate",
	"TLSPrivateKeyFile":                "goes with TLSCertFile",
	"CertDir":                          "<rootDir>/pki, which depends on rootDir",
	"RotateServerCertificates":         "the kubelet's false",
	"Authentication.X509.ClientCAFile": "no client certificate authenticates",
	"PprofBindAddress":                 "off: the profiles are unauthenticated",
	"ShutdownGracePeriod":              "graceful shutdown off, as the kubelet's",
	"ShutdownGracePeriodCriticalPods":  "no part kept for critical pods, as the kubelet's",
	"ShutdownGracePeriodByPodPriority": "no bands, as the kubelet's",
}

// fileOnly are the configuration's fields that no flag sets, saying why:
// the kubelet sets them in its file alone, and nodelet keeps its names.
var fileOnly = map[string]string{
	"ShutdownGracePeriod":              "the kubelet has no flag for it",
	"ShutdownGracePeriodCriticalPods":  "the kubelet has no flag for it",
	"ShutdownGracePeriodByPodPriority": "a list of bands, which the kubelet's file alone sets",
	"EnableSystemLogHandler":           "the kubelet has no flag for it",
	"EnableSystemLogQuery":             "the kubelet has no flag for it",
}

// TestEverySettingIsWrittenOnce walks every field of NodeletConfiguration,
// the nested structs' included, and fails for one that misses a place a
// setting must be written in: its doc comment, its flag (a `flag` tag
// that a flag of the command line sets it through), its row in the
// generated reference (docs/configuration.md), its default (set by
// SetDefaults, or its zero listed in zeroDefaults, saying why) and its
// place in /configz (the defaulted configuration marshalled as the server
// marshals it). The flags alone (Flags) need their doc comment, flag and
// row too; their defaults are newFlags'.
//
// Adding a setting is then its field, its default and its validation, and
// generating the reference again. Adding, say,
//
//	// NodeLeaseDurationSeconds is how long the node's Lease lasts.
//	NodeLeaseDurationSeconds int32 `json:"nodeLeaseDurationSeconds"`
//
// to NodeletConfiguration fails here with
//
//	NodeLeaseDurationSeconds: no flag sets it: name one in its `flag` tag
//	NodeLeaseDurationSeconds: no row in docs/configuration.md: run make docs
//	NodeLeaseDurationSeconds: SetDefaults leaves it zero: give it its default there, or list it in zeroDefaults with why zero is its default
//
// until the field's tags say `json:"nodeLeaseDurationSeconds"
// flag:"node-lease-duration-seconds"`, SetDefaults has
// setInt32(&c.NodeLeaseDurationSeconds, 40) and the reference is generated
// again. Its checks go in Validate. A field without a doc comment fails
// too, and so does one the file cannot hold (json:"-"), which /configz
// would not serve.
func TestEverySettingIsWrittenOnce(t *testing.T) {
	defaulted := &NodeletServer{Flags: newFlags("")}
	configv1alpha1.SetDefaults(&defaulted.NodeletConfiguration)
	flagsAlone, config, err := defaulted.settings()
	if err != nil {
		t.Fatal(err)
	}
	bound := flagsSetting(t)

	configz := servedConfigz(t, &defaulted.NodeletConfiguration)
	// The reference as committed: TestReferenceIsGenerated checks it is
	// the generator's.
	reference, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(string(reference), "\n")

	for i, s := range append(flagsAlone, config...) {
		inFile := i >= len(flagsAlone)
		if s.doc == "" {
			t.Errorf("%s: no doc comment: write one, the setting's one description", s.path)
		}
		_, noFlag := fileOnly[s.path]
		noFlag = noFlag && inFile
		switch {
		case len(bound[i]) == 0 && !noFlag:
			t.Errorf("%s: no flag sets it: name one in its `flag` tag", s.path)
		case len(bound[i]) > 0 && noFlag:
			t.Errorf("%s: a flag sets it: take it out of fileOnly", s.path)
		}
		row := "| `--" + s.flag.name + "`"
		if noFlag {
			row = "| none"
		} else if s.flag.part != "" {
			row += " (" + s.flag.part + ")"
		}
		if inFile {
			row += " | `" + s.jsonPath + "` |"
		}
		if !slices.ContainsFunc(rows, func(line string) bool { return strings.HasPrefix(line, row) }) {
			t.Errorf("%s: no row in docs/configuration.md: run make docs", s.path)
		}
		if !inFile {
			continue
		}
		_, listed := zeroDefaults[s.path]
		switch zero := s.value.IsZero(); {
		case zero && !listed:
			t.Errorf("%s: SetDefaults leaves it zero: give it its default there, or list it in zeroDefaults with why zero is its default", s.path)
		case !zero && listed:
			t.Errorf("%s: SetDefaults sets it: take it out of zeroDefaults", s.path)
		}
		if _, ok := lookup(configz, s.jsonPath); !ok {
			t.Errorf("%s: /configz does not serve it as %s: a field of the file needs a json tag naming it", s.path, s.jsonPath)
		}
	}
	for path := range zeroDefaults {
		if !slices.ContainsFunc(config, func(s setting) bool { return s.path == path }) {
			t.Errorf("zeroDefaults lists %s, which is no setting", path)
		}
	}
	for path := range fileOnly {
		if !slices.ContainsFunc(config, func(s setting) bool { return s.path == path }) {
			t.Errorf("fileOnly lists %s, which is no setting of the file", path)
		}
	}
}

// flagsSetting are, for each setting, the flags alone then the
// configuration's, the flags that set it: each flag is given a value on a
// fresh defaulted NodeletServer, and the settings whose value then differs
// from another fresh one's are its.
func flagsSetting(t *testing.T) [][]string {
	t.Helper()
	fresh := func() (*NodeletServer, *pflag.FlagSet) {
		s := &NodeletServer{Flags: newFlags("host")}
		configv1alpha1.SetDefaults(&s.NodeletConfiguration)
		fs, err := s.flagSet()
		if err != nil {
			t.Fatal(err)
		}
		return s, fs
	}
	all := func(s *NodeletServer) []setting {
		return append(settings(&s.Flags, nil), settings(&s.NodeletConfiguration, nil)...)
	}
	want, flags := fresh()
	before := all(want)
	bound := make([][]string, len(before))
	flags.VisitAll(func(f *pflag.Flag) {
		set := false
		for _, value := range testValues(f) {
			s, fs := fresh()
			if fs.Set(f.Name, value) != nil {
				continue
			}
			for i, after := range all(s) {
				if !reflect.DeepEqual(after.value.Interface(), before[i].value.Interface()) {
					bound[i] = append(bound[i], f.Name)
					set = true
				}
			}
			break
		}
		if !set {
			t.Errorf("--%s sets no setting", f.Name)
		}
	})
	return bound
}

// testValues are values a flag of f's type takes that are not its
// default, to be tried in turn until one is taken.
func testValues(f *pflag.Flag) []string {
	switch f.Value.Type() {
	case "bool":
		if f.DefValue == "true" {
			return []string{"false"}
		}
		return []string{"true"}
	case "int", "int32", "int64":
		return []string{"7"}
	case "duration":
		return []string{"7s"}
	case "strings":
		return []string{"a,b"}
	case "mapStringString":
		return []string{"a=b", "a<b"}
	case "[]v1.Taint":
		return []string{"a=b:NoSchedule"}
	}
	return []string{"x-test", "192.0.2.7:7"}
}

// servedConfigz is the configuration as /configz serves it (package
// server marshals {"nodeletconfig": config}), read back as JSON.
func servedConfigz(t *testing.T, config *configv1alpha1.NodeletConfiguration) map[string]any {
	t.Helper()
	body, err := json.Marshal(map[string]any{"nodeletconfig": config})
	if err != nil {
		t.Fatal(err)
	}
	var served map[string]map[string]any
	if err := json.Unmarshal(body, &served); err != nil {
		t.Fatal(err)
	}
	return served["nodeletconfig"]
}

// lookup finds a dotted path in decoded JSON.
func lookup(doc map[string]any, path string) (any, bool) {
	var value any = doc
	for key := range strings.SplitSeq(path, ".") {
		object, ok := value.(map[string]any)
		if !ok {
			return nil, false
		}
		if value, ok = object[key]; !ok {
			return nil, false
		}
	}
	return value, true
}

// The committed reference is the generated one: a setting changed in its
// doc comment, flag or default is changed there too.
func TestReferenceIsGenerated(t *testing.T) {
	var want bytes.Buffer
	if err := WriteReference(&want); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Error("docs/configuration.md is not what go run ./hack/docgen/config writes: run make docs")
	}
}
