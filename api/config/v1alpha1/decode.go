package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode reads a configuration file, YAML or JSON, strictly: it must name
// this apiVersion and kind, and an unknown or duplicate field or a value
// of the wrong type is an error naming the field. The result is not
// defaulted.
func Decode(data []byte) (*NodeletConfiguration, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, oneLine(err)
	}
	var meta metav1.TypeMeta
	if err := json.Unmarshal(js, &meta); err != nil {
		return nil, fmt.Errorf("not a %s object: %w", Kind, err)
	}
	switch {
	case meta.APIVersion == "":
		return nil, fmt.Errorf("missing apiVersion, want %q", SchemeGroupVersion.String())
	case meta.APIVersion != SchemeGroupVersion.String():
		return nil, fmt.Errorf("apiVersion %q is not supported, want %q", meta.APIVersion, SchemeGroupVersion.String())
	case meta.Kind == "":
		return nil, fmt.Errorf("missing kind, want %q", Kind)
	case meta.Kind != Kind:
		return nil, fmt.Errorf("kind %q is not supported, want %q", meta.Kind, Kind)
	}

	c := &NodeletConfiguration{}
	if err := UnmarshalStrict(js, c); err != nil {
		return nil, err
	}
	return c, nil
}

// UnmarshalStrict decodes JSON into the struct into points to as Decode
// does: an unknown or duplicate field or a value of the wrong type is an
// error naming the field, on one line. The kubelet's configuration file is
// read with it too.
func UnmarshalStrict(js []byte, into any) error {
	strictErrs, err := sigsjson.UnmarshalStrict(js, into)
	if err != nil {
		return badValue(js, err, func() any { return reflect.New(reflect.TypeOf(into).Elem()).Interface() })
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// badValue names the field whose value could not be decoded: the JSON
// decoder's own error names the Go type and, for values with their own
// decoding (durations), no field at all. Each field is decoded alone,
// deepest first, until the one that fails is found.
func badValue(js []byte, err error, newObj func() any) error {
	var doc map[string]any
	if json.Unmarshal(js, &doc) != nil {
		return oneLine(err)
	}
	path, fieldErr := findBadValue(nil, doc, newObj)
	if fieldErr == nil {
		return oneLine(err)
	}
	if typeErr := (*json.UnmarshalTypeError)(nil); errors.As(fieldErr, &typeErr) {
		return fmt.Errorf("field %q: got %s, want %s", path, typeErr.Value, typeErr.Type)
	}
	return fmt.Errorf("field %q: %w", path, oneLine(fieldErr))
}

// findBadValue returns the dotted path of the first field under prefix
// whose value fails to decode on its own into a new object, and its
// error.
func findBadValue(prefix []string, fields map[string]any, newObj func() any) (string, error) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := append(append([]string(nil), prefix...), k)
		alone := any(fields[k])
		for i := len(path) - 1; i >= 0; i-- {
			alone = map[string]any{path[i]: alone}
		}
		js, err := json.Marshal(alone)
		if err != nil {
			continue
		}
		if err := json.Unmarshal(js, newObj()); err != nil {
			if children, ok := fields[k].(map[string]any); ok {
				if childPath, childErr := findBadValue(path, children, newObj); childErr != nil {
					return childPath, childErr
				}
			}
			return strings.Join(path, "."), err
		}
	}
	return "", nil
}

// oneLine keeps an error on one line, as a start-up error is printed.
func oneLine(err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}
