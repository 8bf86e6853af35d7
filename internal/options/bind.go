package options

import (
	"fmt"
	"maps"
	"net"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/node"
	"github.com/nodelet/nodelet/internal/util/fielddoc"
)

// setting is one field of NodeletConfiguration or Flags that holds a
// value, a nested struct's included: what one flag sets, or half of it.
type setting struct {
	// path is the field's Go path, "Authentication.X509.ClientCAFile".
	path string
	// jsonPath is its path in the configuration file,
	// "authentication.x509.clientCAFile", from the fields' json tags;
	// Flags' fields have none.
	jsonPath string
	flag     flagTag
	// value is the field itself, addressable.
	value reflect.Value
	// doc is the field's doc comment, and section the heading of the
	// part of its struct it is in (fielddoc.Field's).
	doc, section string
}

// flagTag is a field's `flag` tag: the flag's name, then options.
type flagTag struct {
	// name is the flag's, without "--"; "" when the field has no tag.
	name string
	// sep separates a map's keys from their values on the command line:
	// "=" unless the tag says "sep=<".
	sep string
	// part is "host" or "port" for the two fields one host:port flag sets.
	part string
}

func parseFlagTag(tag string) flagTag {
	name, options, _ := strings.Cut(tag, ",")
	t := flagTag{name: name, sep: "="}
	for option := range strings.SplitSeq(options, ",") {
		if sep, ok := strings.CutPrefix(option, "sep="); ok {
			t.sep = sep
		} else {
			t.part = option
		}
	}
	return t
}

// durationType is the one struct type that is a value, not a group of
// settings.
var durationType = reflect.TypeFor[metav1.Duration]()

// settings are the fields of the struct structPtr points to, depth first
// in their order, with their docs: a nested struct's fields follow it, and
// it is no setting itself. Embedded fields (the file's TypeMeta) are not
// settings.
func settings(structPtr any, docs []fielddoc.Field) []setting {
	byPath := map[string]fielddoc.Field{}
	for _, doc := range docs {
		byPath[doc.Path] = doc
	}
	var all []setting
	var walk func(v reflect.Value, path, jsonPath string)
	walk = func(v reflect.Value, path, jsonPath string) {
		for i := range v.NumField() {
			field := v.Type().Field(i)
			if field.Anonymous {
				continue
			}
			name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
			s := setting{
				path:     path + field.Name,
				jsonPath: jsonPath + name,
				flag:     parseFlagTag(field.Tag.Get("flag")),
				value:    v.Field(i),
				doc:      byPath[path+field.Name].Doc,
				section:  byPath[path+field.Name].Section,
			}
			if field.Type.Kind() == reflect.Struct && field.Type != durationType {
				walk(s.value, s.path+".", s.jsonPath+".")
				continue
			}
			all = append(all, s)
		}
	}
	walk(reflect.ValueOf(structPtr).Elem(), "", "")
	return all
}

// bindFlags binds each setting's flag, described by the setting's doc
// comment with the settings it names called by their flags; the flag's
// default is the setting's value now.
func bindFlags(fs *pflag.FlagSet, all []setting) error {
	flagNames := names(all, func(s setting) string { return "--" + s.flag.name })
	hostPorts := map[string]*hostPortFlag{}
	var hostPortNames []string
	for _, s := range all {
		name, usage := s.flag.name, description(s, flagNames)
		switch {
		case name == "":
			continue
		case s.flag.part != "":
			hp := hostPorts[name]
			if hp == nil {
				hp = &hostPortFlag{}
				hostPorts[name] = hp
				hostPortNames = append(hostPortNames, name)
			}
			if err := hp.add(s, usage); err != nil {
				return fmt.Errorf("--%s: %w", name, err)
			}
		default:
			if err := bindFlag(fs, s, usage); err != nil {
				return err
			}
		}
	}
	for _, name := range hostPortNames {
		hp := hostPorts[name]
		if hp.host == nil || hp.port == nil {
			return fmt.Errorf("--%s: a host:port flag needs a host field and a port field", name)
		}
		fs.Var(hp, name, strings.Join(hp.usage, " "))
	}
	return nil
}

// names are the settings' Go names, the last of their paths, and what a
// reader knows each one by: its flag, or its field in the file. A name two
// settings share (Enabled) is left out: a comment naming it would be
// ambiguous.
func names(all []setting, known func(setting) string) map[string]string {
	byName, count := map[string]string{}, map[string]int{}
	for _, s := range all {
		name := s.path[strings.LastIndex(s.path, ".")+1:]
		byName[name] = known(s)
		count[name]++
	}
	for name, n := range count {
		if n > 1 {
			delete(byName, name)
		}
	}
	return byName
}

// goName is a word that may be a setting's Go name.
var goName = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

// description is a setting's doc comment as --help or the reference shows
// it: the comment's subject, the setting's own Go name, left out where the
// comment says what it is ("KubeAPIBurst is the burst ..." is "The burst
// ..."), and every setting it names called as the reader knows it (names).
func description(s setting, known map[string]string) string {
	name := s.path[strings.LastIndex(s.path, ".")+1:]
	doc := s.doc
	for _, verb := range []string{" is ", " are "} {
		if rest, ok := strings.CutPrefix(doc, name+verb); ok {
			doc = strings.ToUpper(rest[:1]) + rest[1:]
			break
		}
	}
	return goName.ReplaceAllStringFunc(doc, func(word string) string {
		if k, ok := known[word]; ok {
			return k
		}
		return word
	})
}

// bindFlag binds the flag of one setting, by the setting's type. A
// pointer is given a value to point at first: a flag always has one.
func bindFlag(fs *pflag.FlagSet, s setting, usage string) error {
	name := s.flag.name
	switch p := s.value.Addr().Interface().(type) {
	case *string:
		fs.StringVar(p, name, *p, usage)
	case **string:
		fs.StringVar(alloc(p), name, **p, usage)
	case *bool:
		fs.BoolVar(p, name, *p, usage)
	case **bool:
		fs.BoolVar(alloc(p), name, **p, usage)
	case *int32:
		fs.Int32Var(p, name, *p, usage)
	case **int32:
		fs.Int32Var(alloc(p), name, **p, usage)
	case **int64:
		fs.Int64Var(alloc(p), name, **p, usage)
	case *metav1.Duration:
		fs.DurationVar(&p.Duration, name, p.Duration, usage)
	case **metav1.Duration:
		fs.DurationVar(&alloc(p).Duration, name, (*p).Duration, usage)
	case *[]string:
		fs.StringSliceVar(p, name, *p, usage)
	case *map[string]string:
		fs.Var(&mapFlag{m: p, sep: s.flag.sep}, name, usage)
	case *map[string][]string:
		fs.Var(&multimapFlag{m: p}, name, usage)
	case *[]corev1.Taint:
		fs.Var(&taintsFlag{taints: p}, name, usage)
	default:
		return fmt.Errorf("%s: no flag is written for a field of type %s", s.path, s.value.Type())
	}
	return nil
}

func alloc[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

// mapFlag is a flag of comma-separated key<sep>value pairs into a map, as
// the kubelet's --system-reserved (sep "=") and --eviction-hard (sep
// "<"): the first time it is given it replaces the default whole, a flag
// given again adds to it.
type mapFlag struct {
	m   *map[string]string
	sep string
	set bool
}

func (f *mapFlag) String() string {
	if f.m == nil || *f.m == nil {
		return ""
	}
	keys := slices.Sorted(maps.Keys(*f.m))
	pairs := make([]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, k+f.sep+(*f.m)[k])
	}
	return strings.Join(pairs, ",")
}

func (f *mapFlag) Set(value string) error {
	if !f.set {
		*f.m = map[string]string{}
		f.set = true
	}
	return eachPair(value, f.sep, func(k, v string) { (*f.m)[k] = v })
}

// eachPair calls add with each key and value of value's comma-separated
// key<sep>value pairs, trimmed, skipping empty ones.
func eachPair(value, sep string, add func(k, v string)) error {
	for pair := range strings.SplitSeq(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, sep)
		if !ok {
			return fmt.Errorf("malformed pair %q, expect key%svalue", pair, sep)
		}
		add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return nil
}

func (f *mapFlag) Type() string { return "mapStringString" }

// multimapFlag is a flag of comma-separated key:value pairs into a map of
// lists, as the kubelet's --manifest-url-header: a key given twice keeps
// both values in order; the first time the flag is given it replaces the
// default whole, a flag given again adds to it.
type multimapFlag struct {
	m   *map[string][]string
	set bool
}

func (f *multimapFlag) String() string {
	if f.m == nil || *f.m == nil {
		return ""
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(*f.m)) {
		for _, v := range (*f.m)[k] {
			pairs = append(pairs, k+":"+v)
		}
	}
	return strings.Join(pairs, ",")
}

func (f *multimapFlag) Set(value string) error {
	if !f.set {
		*f.m = map[string][]string{}
		f.set = true
	}
	return eachPair(value, ":", func(k, v string) { (*f.m)[k] = append((*f.m)[k], v) })
}

func (f *multimapFlag) Type() string { return "colonSeparatedMultimapStringString" }

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

// hostPortFlag is one host:port flag over two settings, as
// controller-runtime's --health-probe-bind-address over the file's
// healthzBindAddress and healthzPort: "0" (or "") is port 0, off.
type hostPortFlag struct {
	host  *string
	port  **int32
	usage []string
}

// add takes the setting as the flag's host or port.
func (f *hostPortFlag) add(s setting, usage string) error {
	var ok bool
	switch s.flag.part {
	case "host":
		f.host, ok = s.value.Addr().Interface().(*string)
	case "port":
		f.port, ok = s.value.Addr().Interface().(**int32)
	}
	if !ok {
		return fmt.Errorf("%s: a %s cannot be a host:port flag's %q", s.path, s.value.Type(), s.flag.part)
	}
	f.usage = append(f.usage, usage)
	return nil
}

func (f *hostPortFlag) String() string {
	if f.host == nil || f.port == nil || ptr.Deref(*f.port, 0) == 0 {
		return "0"
	}
	return net.JoinHostPort(*f.host, strconv.Itoa(int(**f.port)))
}

func (f *hostPortFlag) Set(value string) error {
	host, port, err := splitBindAddress(value)
	if err != nil {
		return err
	}
	*f.host, *f.port = host, ptr.To(port)
	return nil
}

func (f *hostPortFlag) Type() string { return "string" }

// splitBindAddress splits host:port; "0" and "" are port 0, off.
func splitBindAddress(address string) (string, int32, error) {
	if address == "" || address == "0" {
		return "", 0, nil
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, fmt.Errorf("%q is not host:port: %w", address, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("%q: port %q is not a number from 0 to 65535", address, port)
	}
	return host, int32(n), nil
}
