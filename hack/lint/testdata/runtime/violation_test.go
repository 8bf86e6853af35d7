package runtime

import (
	"testing"

	// A test is held to the layering too.
	"github.com/nodelet/nodelet/internal/node"
)

func TestNodeRef(t *testing.T) {
	if node.Ref("n").Name != "n" {
		t.Error("the node's reference names another node")
	}
}
