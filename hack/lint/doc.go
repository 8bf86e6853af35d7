// Package lint tests the project's golangci-lint configuration
// (.golangci.yml): its rules for pure code report a violation in a file
// of a pure path, and only there. The code linted is in testdata, outside
// `./...`.
package lint
