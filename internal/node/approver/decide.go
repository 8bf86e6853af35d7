// Package approver approves the CertificateSigningRequests with which
// nodelet's DaemonSet pods obtain their companion node's client
// certificate (package nodeidentity) and, once they speak as that node,
// its serving certificate (DecideServing, serving.go), and nothing else. A request is
// approved only when it comes from the DaemonSet's ServiceAccount with a
// token bound to a pod (the API server then puts the pod's name and UID
// and its node's name in the requester's user info, which the CSR
// carries), that pod still exists with that UID, is controlled by
// nodelet's DaemonSet (that very object, by UID) and runs on that node, and the request asks for
// exactly that node's companion identity — system:node:<node><suffix> in
// system:nodes, for client authentication only — for a bounded lifetime.
// A token bound straight to a Node names a node too, but proves no
// DaemonSet pod: whoever may create tokens for the ServiceAccount could
// name any node with one. Anything else is left pending, never denied:
// another approver may be the one to judge it.
//
// Decide is the pure decision over the request and the pod as read; the
// Reconciler reads that pod and applies the decision to the CSRs of the
// kubelet client signer.
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/node/nodeuser"
)

// The user info extras in which the API server describes the object a
// service account token is bound to.
const (
	// NodeNameExtra names the node: of the pod the token is bound to, or
	// the Node itself.
	NodeNameExtra = "authentication.kubernetes.io/node-name"
	// PodNameExtra and PodUIDExtra name the pod, for a token bound to a
	// pod only.
	PodNameExtra = "authentication.kubernetes.io/pod-name"
	PodUIDExtra  = "authentication.kubernetes.io/pod-uid"
)

const (
	// SignerName is the only signer whose requests are judged.
	SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
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
	// DaemonSetNamespace and DaemonSetName name nodelet's DaemonSet: only
	// a token bound to a pod it controls is trusted. Its pods, and so the
	// pods looked up, are in DaemonSetNamespace.
	DaemonSetNamespace, DaemonSetName string
	// MaxExpirationSeconds is the longest certificate lifetime approved.
	// A request must set spec.expirationSeconds to at most this: a
	// certificate cannot be revoked, and this one is granted on the word
	// of a pod that may be gone tomorrow. Without it the signer picks the
	// lifetime (kube-controller-manager's --cluster-signing-duration, a
	// year by default), which the approver cannot see.
	MaxExpirationSeconds int32
}

// Request is what a CSR says, as plain values, and the pod its
// requester's token is bound to, as read from the API server.
type Request struct {
	SignerName string
	// Username and Extra are the requester's user info, which the API
	// server writes into the CSR.
	Username string
	Extra    map[string][]string
	Usages   []certificatesv1.KeyUsage
	// ExpirationSeconds is spec.expirationSeconds, nil when not set.
	ExpirationSeconds *int32
	// PEM is spec.request, the PEM-encoded PKCS#10 request.
	PEM []byte
	// Pod is the pod named by PodNameExtra in the DaemonSet's namespace,
	// nil when there is none (or no pod is named).
	Pod *corev1.Pod
	// DaemonSetUID is the UID of nodelet's DaemonSet as read, empty when
	// it does not exist. A pod's controller reference is trusted only
	// with this UID: a name alone is matched by a pod that anyone who may
	// create pods in the namespace wrote an owner reference into.
	DaemonSetUID types.UID
}

// Decision says whether to approve, and why (a sentence for the log and
// the approval condition).
type Decision struct {
	Approve bool
	Reason  string
	// Retry: the request may pass later without changing, on a change the
	// approver is not told of (a serving certificate asked for before its
	// Node is registered, or lists the address it asks for).
	Retry bool
}

func pending(format string, args ...any) Decision {
	return Decision{Reason: fmt.Sprintf(format, args...)}
}

// BoundPodName is the name of the pod the requester's token is bound to,
// which the caller reads for Decide; false when the user info names none
// (or more than one).
func BoundPodName(extra map[string][]string) (string, bool) {
	return single(extra, PodNameExtra)
}

// single is the one non-empty value of an extra.
func single(extra map[string][]string, key string) (string, bool) {
	values := extra[key]
	if len(values) != 1 || values[0] == "" {
		return "", false
	}
	return values[0], true
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
	if d, ok := checkLifetime(policy, r.ExpirationSeconds); !ok {
		return d
	}
	node, d, ok := checkBoundPod(policy, r)
	if !ok {
		return d
	}
	csr, err := parseRequest(r.PEM)
	if err != nil {
		return pending("%v", err)
	}
	want := nodeuser.Name(node + policy.NodeNameSuffix)
	if csr.Subject.CommonName != want || !slices.Equal(csr.Subject.Organization, []string{nodeuser.Group}) ||
		len(csr.Subject.Names) != 2 || len(csr.Subject.ExtraNames) != 0 {
		return pending("its subject is %q, not exactly CN=%s,O=%s (the requester's pod runs on node %s)", csr.Subject.String(), want, nodeuser.Group, node)
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
	return Decision{Approve: true, Reason: fmt.Sprintf(
		"the subject %s names the companion of node %s, where pod %s/%s of DaemonSet %s, to which the requester's token is bound, runs; for %d seconds at most",
		want, node, r.Pod.Namespace, r.Pod.Name, policy.DaemonSetName, *r.ExpirationSeconds)}
}

// checkLifetime: expirationSeconds set, and not above the policy's
// maximum (the API server refuses less than 600 itself).
func checkLifetime(policy Policy, seconds *int32) (Decision, bool) {
	if seconds == nil {
		return pending("it sets no expirationSeconds, so the signer would pick the certificate's lifetime; at most %d seconds are approved", policy.MaxExpirationSeconds), false
	}
	if *seconds > policy.MaxExpirationSeconds {
		return pending("its expirationSeconds is %d, more than the %d approved", *seconds, policy.MaxExpirationSeconds), false
	}
	return Decision{}, true
}

// checkBoundPod: the requester's token is bound to a pod that still
// exists with the token's UID, is controlled by nodelet's DaemonSet, uses
// its ServiceAccount, has not finished, and runs on the node the token
// names; it returns that node.
func checkBoundPod(policy Policy, r Request) (string, Decision, bool) {
	podName, ok := BoundPodName(r.Extra)
	podUID, hasUID := single(r.Extra, PodUIDExtra)
	if !ok || !hasUID {
		return "", pending("the requester's token is not bound to a pod (extras %s %q, %s %q): a token bound to a Node, or to nothing, proves no DaemonSet pod",
			PodNameExtra, r.Extra[PodNameExtra], PodUIDExtra, r.Extra[PodUIDExtra]), false
	}
	node, ok := single(r.Extra, NodeNameExtra)
	if !ok {
		return "", pending("the requester's user info names no node (extra %s is %q): its pod %s was not on a node when the token was made", NodeNameExtra, r.Extra[NodeNameExtra], podName), false
	}
	key := policy.DaemonSetNamespace + "/" + podName
	pod := r.Pod
	switch {
	case pod == nil:
		return "", pending("pod %s, to which the requester's token is bound, does not exist", key), false
	case pod.Namespace != policy.DaemonSetNamespace || pod.Name != podName:
		return "", pending("the pod read is %s/%s, not %s", pod.Namespace, pod.Name, key), false
	case string(pod.UID) != podUID:
		return "", pending("pod %s has UID %s, not %s to which the requester's token is bound: it was replaced", key, pod.UID, podUID), false
	}
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || owner.APIVersion != "apps/v1" || owner.Kind != "DaemonSet" || owner.Name != policy.DaemonSetName {
		return "", pending("pod %s is not controlled by DaemonSet %s/%s (its controller: %s)", key, policy.DaemonSetNamespace, policy.DaemonSetName, describeOwner(owner)), false
	}
	switch {
	case r.DaemonSetUID == "":
		return "", pending("DaemonSet %s/%s, which pod %s names as its controller, does not exist", policy.DaemonSetNamespace, policy.DaemonSetName, key), false
	case owner.UID != r.DaemonSetUID:
		return "", pending("pod %s names DaemonSet %s with UID %s as its controller, but the DaemonSet's UID is %s", key, policy.DaemonSetName, owner.UID, r.DaemonSetUID), false
	}
	if user := "system:serviceaccount:" + pod.Namespace + ":" + pod.Spec.ServiceAccountName; user != policy.Requester {
		return "", pending("pod %s runs as %s, not as %s", key, user, policy.Requester), false
	}
	if pod.Spec.NodeName != node {
		return "", pending("pod %s runs on node %q, not on %s, which the requester's token names", key, pod.Spec.NodeName, node), false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return "", pending("pod %s has finished (phase %s)", key, pod.Status.Phase), false
	}
	return node, Decision{}, true
}

func describeOwner(owner *metav1.OwnerReference) string {
	if owner == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s of %s", owner.Kind, owner.Name, owner.APIVersion)
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
	return exactUsages(usages, certificatesv1.UsageClientAuth, rsaKey)
}

// exactUsages: digital signature and the extended usage (client or
// server auth), each once, with key encipherment besides only for an RSA
// key.
func exactUsages(usages []certificatesv1.KeyUsage, extended certificatesv1.KeyUsage, rsaKey bool) bool {
	want := []certificatesv1.KeyUsage{extended, certificatesv1.UsageDigitalSignature}
	if rsaKey && slices.Contains(usages, certificatesv1.UsageKeyEncipherment) {
		want = append(want, certificatesv1.UsageKeyEncipherment)
	}
	got := slices.Clone(usages)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}
