package approver

import (
	"fmt"
	"net"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/node/nodeuser"
)

// ServingSignerName is the signer of the node's serving certificate,
// which nodelet requests (rotateServerCertificates) as its companion node,
// once it speaks as that node.
const ServingSignerName = certificatesv1.KubeletServingSignerName

// ServingPolicy is what the approver allows of serving certificate
// requests.
type ServingPolicy struct {
	// NodeNameSuffix ends the name of every node whose requests are
	// approved: only nodelet's companions, never a kubelet's node.
	NodeNameSuffix string
	// MaxExpirationSeconds is the longest certificate lifetime approved,
	// as Policy's.
	MaxExpirationSeconds int32
}

// ServingRequest is what a serving CSR says, as plain values, and the Node
// its requester is, as read from the API server.
type ServingRequest struct {
	SignerName string
	// Username and Groups are the requester's, which the API server
	// writes into the CSR.
	Username          string
	Groups            []string
	Usages            []certificatesv1.KeyUsage
	ExpirationSeconds *int32
	PEM               []byte
	// Node is the Node the requester's user names, nil when there is none.
	Node *corev1.Node
}

// CompanionNodeName is the node a serving CSR's requester is, when it is a
// node's user whose name ends with the suffix: the Node the caller reads
// for DecideServing.
func CompanionNodeName(username, suffix string) (string, bool) {
	node, ok := strings.CutPrefix(username, nodeuser.Name(""))
	if !ok || suffix == "" || !strings.HasSuffix(node, suffix) || len(node) == len(suffix) {
		return "", false
	}
	return node, true
}

// DecideServing judges one serving certificate request. It approves only
// what the kubelet-serving signer would issue a companion node, and no
// more: asked by the node itself (system:node:<name><suffix> in
// system:nodes), for exactly that subject, for names and addresses that
// are all the Node's own (its name and host names, its IPs, as its status
// reports them), with a serving certificate's usages, for a bounded
// lifetime. Anything else stays pending, as in Decide.
func DecideServing(policy ServingPolicy, r ServingRequest) Decision {
	if r.SignerName != ServingSignerName {
		return pending("its signer is %q, not %s", r.SignerName, ServingSignerName)
	}
	node, ok := CompanionNodeName(r.Username, policy.NodeNameSuffix)
	if !ok {
		return pending("it was requested by %q, not by a companion node (system:node:<name>%s)", r.Username, policy.NodeNameSuffix)
	}
	if !slices.Contains(r.Groups, nodeuser.Group) {
		return pending("its requester %s is not in group %s", r.Username, nodeuser.Group)
	}
	if d, ok := checkLifetime(Policy{MaxExpirationSeconds: policy.MaxExpirationSeconds}, r.ExpirationSeconds); !ok {
		return d
	}
	csr, err := parseRequest(r.PEM)
	if err != nil {
		return pending("%v", err)
	}
	if csr.Subject.CommonName != r.Username || !slices.Equal(csr.Subject.Organization, []string{nodeuser.Group}) ||
		len(csr.Subject.Names) != 2 || len(csr.Subject.ExtraNames) != 0 {
		return pending("its subject is %q, not exactly CN=%s,O=%s (its requester)", csr.Subject.String(), r.Username, nodeuser.Group)
	}
	if len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return pending("it asks for e-mail or URI subject alternative names, which a node's serving certificate has none of")
	}
	if len(csr.DNSNames)+len(csr.IPAddresses) == 0 {
		return pending("it names no DNS name or IP address to serve")
	}
	// nodelet asks as soon as it has its identity, which may be before its
	// Node is registered or lists its addresses: judged again later.
	switch {
	case r.Node == nil:
		return retry("node %s, its requester, does not exist", node)
	case r.Node.Name != node:
		return pending("the Node read is %s, not %s", r.Node.Name, node)
	}
	names, ips := nodeNames(r.Node)
	for _, name := range csr.DNSNames {
		if !slices.Contains(names, name) {
			return retry("it asks for DNS name %q, which is not node %s's name or one of its host names %q", name, node, names)
		}
	}
	for _, ip := range csr.IPAddresses {
		if !slices.ContainsFunc(ips, ip.Equal) {
			return retry("it asks for IP address %s, which is not one of node %s's addresses %v", ip, node, ips)
		}
	}
	rsaKey, err := checkKey(csr.PublicKey)
	if err != nil {
		return pending("%v", err)
	}
	if !servingUsages(r.Usages, rsaKey) {
		return pending("its usages are %q, not digital signature and server auth (and key encipherment with an RSA key)", r.Usages)
	}
	return Decision{Approve: true, Reason: fmt.Sprintf(
		"companion node %s asks to serve as itself, for its own names %q and addresses %v; for %d seconds at most",
		node, csr.DNSNames, csr.IPAddresses, *r.ExpirationSeconds)}
}

func retry(format string, args ...any) Decision {
	d := pending(format, args...)
	d.Retry = true
	return d
}

// nodeNames are the DNS names and IPs a Node may be served as: its name,
// the host names and DNS names its status lists, and its IPs.
func nodeNames(node *corev1.Node) ([]string, []net.IP) {
	names := []string{node.Name}
	var ips []net.IP
	for _, address := range node.Status.Addresses {
		switch address.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			names = append(names, address.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			if ip := net.ParseIP(address.Address); ip != nil {
				ips = append(ips, ip)
			}
		}
	}
	return names, ips
}

// servingUsages: digital signature and server auth, each once, with key
// encipherment besides only for an RSA key — what the kubelet asks for.
func servingUsages(usages []certificatesv1.KeyUsage, rsaKey bool) bool {
	return exactUsages(usages, certificatesv1.UsageServerAuth, rsaKey)
}
