// Package fielddoc reads the doc comments of a struct's fields from its Go
// source, so that a settings type's comments can be the one description of
// each setting: what --help prints and what a generated reference shows.
//
// A struct's body may be cut into sections by standalone comments, ones
// attached to no field (a blank line between them and the next field's
// doc): each is the heading of the fields after it, up to the next.
package fielddoc

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// Field is one field's documentation.
type Field struct {
	// Path is the field's Go path from the root struct, the names of the
	// struct fields it is nested in first: "Authentication.X509.ClientCAFile".
	Path string
	// Doc is the field's doc comment on one line.
	Doc string
	// Section is the heading of the section the field is in, that of the
	// root struct's field it is nested in for a nested one; "" before the
	// first heading.
	Section string
}

// Parse reads the fields of the struct type named root in the Go source
// src, depth first and in their order: a field whose type is another
// struct type of the same source is followed by that type's fields, under
// its own path. Embedded fields are left out: they are not settings.
func Parse(src []byte, root string) ([]Field, error) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parsing the source of %s: %w", root, err)
	}
	structs := map[string]*ast.StructType{}
	ast.Inspect(file, func(n ast.Node) bool {
		if spec, ok := n.(*ast.TypeSpec); ok {
			if st, ok := spec.Type.(*ast.StructType); ok {
				structs[spec.Name.Name] = st
			}
		}
		return true
	})
	st, ok := structs[root]
	if !ok {
		return nil, fmt.Errorf("no struct type %s in the source", root)
	}
	r := reader{structs: structs, comments: file.Comments}
	r.walk(st, "", "")
	return r.fields, r.err
}

type reader struct {
	structs  map[string]*ast.StructType
	comments []*ast.CommentGroup
	fields   []Field
	err      error
}

// walk adds st's fields under prefix. section is the heading of the root
// field a nested struct belongs to; "" for the root struct, whose own
// headings are read.
func (r *reader) walk(st *ast.StructType, prefix, section string) {
	headings := r.headings(st)
	for _, field := range st.Fields.List {
		if len(field.Names) == 0 {
			continue
		}
		if prefix == "" {
			section = ""
			for _, h := range headings {
				if h.End() < field.Pos() {
					section = headingText(h)
				}
			}
		}
		for _, name := range field.Names {
			path := prefix + name.Name
			r.fields = append(r.fields, Field{Path: path, Doc: oneLine(field.Doc.Text()), Section: section})
			if nested, ok := r.structs[typeName(field.Type)]; ok {
				if nested == st {
					r.err = errors.Join(r.err, fmt.Errorf("field %s: a struct holding itself has no settings to list", path))
					continue
				}
				r.walk(nested, path+".", section)
			}
		}
	}
}

// headings are the comment groups inside st's braces that are no field's
// doc or line comment.
func (r *reader) headings(st *ast.StructType) []*ast.CommentGroup {
	attached := map[*ast.CommentGroup]bool{}
	for _, field := range st.Fields.List {
		attached[field.Doc], attached[field.Comment] = true, true
	}
	var headings []*ast.CommentGroup
	for _, c := range r.comments {
		if c.Pos() > st.Fields.Opening && c.End() < st.Fields.Closing && !attached[c] {
			headings = append(headings, c)
		}
	}
	return headings
}

// typeName is the name of a field's type when it is a type of the same
// source, or a pointer to one; "" otherwise.
func typeName(expr ast.Expr) string {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	if ident, ok := expr.(*ast.Ident); ok {
		return ident.Name
	}
	return ""
}

func headingText(c *ast.CommentGroup) string {
	return strings.TrimSuffix(oneLine(c.Text()), ".")
}

// oneLine joins a comment's lines and paragraphs with single spaces.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
