// Package approver approves the CertificateSigningRequests with which
// nodelet's DaemonSet pods obtain their node's client certificate
// (package nodeidentity), and nothing else. A request is approved only
// when it comes from the DaemonSet's ServiceAccount with a token bound to
// the node its pod runs on (the API server then puts the node's name in
// the requester's user info, which the CSR carries) and asks for exactly
// that node's companion identity: system:node:<node><suffix> in
// system:nodes, for client authentication only. Anything else is left
// pending, never denied: another approver may be the one to judge it.
//
// Decide is the pure decision; the Reconciler applies it to the CSRs of
// the kubelet client signer.
package approver

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
)

const (
	// SignerName is the only signer whose requests are judged.
	SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
	// NodeNameExtra is the user info extra in which the API server names
	// the node a service account token is bound to (the node of the pod
	// it is bound to, or the Node itself).
	NodeNameExtra = "authentication.kubernetes.io/node-name"
	// nodesGroup is the organisation of every node's certificate.
	nodesGroup = "system:nodes"
	// minRSABits is the smallest RSA key accepted.
	minRSABits = 2048
)

// Policy is what the approver allows.
type Policy struct {
	// Requester is the only user whose requests are approved: the
	// DaemonSet's ServiceAccount, system:serviceaccount:<ns>:<name>.
	Requester string
	// NodeNameSuffix is appended to the requester's node's name to name
	// the companion node nodelet registers (-nodelet by default).
	NodeNameSuffix string
}

// Request is what a CSR says, as plain values.
type Request struct {
	SignerName string
	// Username and Extra are the requester's user info, which the API
	// server writes into the CSR.
	Username string
	Extra    map[string][]string
	Usages   []certificatesv1.KeyUsage
	// PEM is spec.request, the PEM-encoded PKCS#10 request.
	PEM []byte
}

// Decision says whether to approve, and why (a sentence for the log and
// the approval condition).
type Decision struct {
	Approve bool
	Reason  string
}

func pending(format string, args ...any) Decision {
	return Decision{Reason: fmt.Sprintf(format, args...)}
}

// Decide judges one request against the policy; it approves only when
// every rule holds, and otherwise says the first that does not.
func Decide(policy Policy, r Request) Decision {
	if r.SignerName != SignerName {
		return pending("its signer is %q, not %s", r.SignerName, SignerName)
	}
	if r.Username != policy.Requester {
		return pending("it was requested by %q, not by nodelet's ServiceAccount %q", r.Username, policy.Requester)
	}
	nodes := r.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return pending("the requester's user info names no node (extra %s is %q): its token is not bound to a pod on a node or to a Node", NodeNameExtra, nodes)
	}
	node := nodes[0]
	csr, err := parseRequest(r.PEM)
	if err != nil {
		return pending("%v", err)
	}
	want := "system:node:" + node + policy.NodeNameSuffix
	if csr.Subject.CommonName != want || !slices.Equal(csr.Subject.Organization, []string{nodesGroup}) ||
		len(csr.Subject.Names) != 2 || len(csr.Subject.ExtraNames) != 0 {
		return pending("its subject is %q, not exactly CN=%s,O=%s (the requester's node is %s)", csr.Subject.String(), want, nodesGroup, node)
	}
	if len(csr.DNSNames)+len(csr.IPAddresses)+len(csr.EmailAddresses)+len(csr.URIs) > 0 {
		return pending("it asks for subject alternative names, which a node's client certificate has none of")
	}
	rsaKey, err := checkKey(csr.PublicKey)
	if err != nil {
		return pending("%v", err)
	}
	if !allowedUsages(r.Usages, rsaKey) {
		return pending("its usages are %q, not digital signature and client auth (and key encipherment with an RSA key)", r.Usages)
	}
	return Decision{Approve: true, Reason: fmt.Sprintf("the subject %s names the companion of node %s, the node the requester's token is bound to", want, node)}
}

// parseRequest decodes the PEM CSR and checks its signature: the requester
// holds the key it asks a certificate for.
func parseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("its request is not a PEM-encoded CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("its request does not parse: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("its request's signature is not valid: %w", err)
	}
	return csr, nil
}

// checkKey accepts ECDSA keys on P-256, P-384 or P-521, Ed25519 keys and
// RSA keys of at least 2048 bits; it tells whether the key is RSA.
func checkKey(key any) (isRSA bool, err error) {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return false, nil
		}
		return false, fmt.Errorf("its ECDSA key is on curve %s, not P-256, P-384 or P-521", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return false, nil
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return true, fmt.Errorf("its RSA key has %d bits, fewer than %d", k.N.BitLen(), minRSABits)
		}
		return true, nil
	}
	return false, fmt.Errorf("its key is a %T, not ECDSA, Ed25519 or RSA", key)
}

// allowedUsages: digital signature and client auth, each once, with key
// encipherment besides only for an RSA key — what the kubelet asks for.
func allowedUsages(usages []certificatesv1.KeyUsage, rsaKey bool) bool {
	want := []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature}
	if rsaKey && slices.Contains(usages, certificatesv1.UsageKeyEncipherment) {
		want = append(want, certificatesv1.UsageKeyEncipherment)
	}
	got := slices.Clone(usages)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}
