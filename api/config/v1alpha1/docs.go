package v1alpha1

import (
	_ "embed" // the source of types.go, for FieldDocs

	"github.com/nodelet/nodelet/internal/util/fielddoc"
)

// typesSource is types.go itself: its doc comments are the settings'
// descriptions, read where they are written rather than copied.
//
//go:embed types.go
var typesSource []byte

// FieldDocs are the doc comments of NodeletConfiguration's fields, nested
// ones included, in their order, with the headings of the sections they
// are in: each setting's one description, which --help and the
// configuration reference show.
func FieldDocs() ([]fielddoc.Field, error) {
	return fielddoc.Parse(typesSource, "NodeletConfiguration")
}
