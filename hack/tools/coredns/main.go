// Command coredns is CoreDNS with the plugins of the local stack's
// Corefile (kubeadm's default one), and no others: the full set would
// bring in every cloud provider's SDK for nothing.
package main

import (
	"github.com/coredns/coredns/coremain"

	// The plugins, registered by their init functions; their order in
	// a server block is CoreDNS's own (core/dnsserver/zdirectives.go).
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
