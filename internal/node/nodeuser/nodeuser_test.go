package nodeuser

import "testing"

// The Node authorizer reads these very strings: a change here locks every
// node out.
func TestName(t *testing.T) {
	if got, want := Name("worker-1"), "system:node:worker-1"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
	if Group != "system:nodes" {
		t.Errorf("Group = %q, want system:nodes", Group)
	}
}
