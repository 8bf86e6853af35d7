// Command config writes nodelet's configuration reference, Markdown, to
// standard output: every flag and configuration file field with its type,
// default and description, from the settings' own doc comments and
// defaults (package internal/options).
//
//	go run ./hack/docgen/config > docs/configuration.md
package main

import (
	"fmt"
	"os"

	"github.com/nodelet/nodelet/internal/options"
)

func main() {
	if err := options.WriteReference(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "docgen config: %v\n", err)
		os.Exit(1)
	}
}
