package v1alpha1

import (
	"strings"
	"testing"
)

// FuzzDecode reads any bytes as nodelet's configuration file: an error or
// a configuration, and an error on one line, as a start-up error prints.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: " + SchemeGroupVersion.String() + "\nkind: " + Kind + "\n",
		"apiVersion: " + SchemeGroupVersion.String() + "\nkind: " + Kind + "\nnodeName: a\nsyncFrequency: 1m\n",
		`{"apiVersion":"` + SchemeGroupVersion.String() + `","kind":"` + Kind + `","syncFrequency":"x"}`,
		"kind: x\nkind: y\n",
		"- a\n- b\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("Decode() error spans lines: %q", err)
			}
			return
		}
		if c == nil {
			t.Fatal("Decode() = nil, nil")
		}
		// Defaulting and validation run on whatever decoded.
		SetDefaults(c)
		_ = Validate(c)
	})
}
