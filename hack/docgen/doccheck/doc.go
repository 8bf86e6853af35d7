// Package doccheck tests that the documentation holds to the tree: the
// layout table of docs/architecture.md lists exactly the folders that hold
// nodelet's Go packages, and every relative link of README.md and docs/
// leads to a file (and a heading) that exists. Its tests run with the unit
// tests (`make test`); the code they check is Markdown, not Go.
package doccheck
