// Package nodeuser names a node's user as the Node authorizer and the
// NodeRestriction admission plugin recognise it: system:node:<node> in
// system:nodes. It imports nothing, so that the node's certificate
// requests (client and serving) and the approver that judges them, which
// must stay small, spell it from one place.
package nodeuser

// Group is the group of every node's user: the organisation of its
// certificates.
const Group = "system:nodes"

// prefix starts every node's user name.
const prefix = "system:node:"

// Name is the user of the node named nodeName.
func Name(nodeName string) string { return prefix + nodeName }
