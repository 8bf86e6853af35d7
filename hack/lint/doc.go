// Package lint tests the project's golangci-lint configuration
// (.golangci.yml): its rules for pure code and for the runtime's layering
// report a violation in a file of the paths they hold for, and only
// there. The code linted is in testdata, outside `./...`.
package lint
