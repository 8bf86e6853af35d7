package approver

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const requester = "system:serviceaccount:nodelet-system:nodelet"

var policy = Policy{
	Requester:            requester,
	NodeNameSuffix:       "-nodelet",
	DaemonSetNamespace:   "nodelet-system",
	DaemonSetName:        "nodelet",
	MaxExpirationSeconds: 86400,
}

// daemonSetPod is nodelet's DaemonSet pod on worker-1, as the API server
// returns it.
func daemonSetPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "nodelet-abcde", Namespace: "nodelet-system", UID: "pod-uid-1",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "DaemonSet", Name: "nodelet", UID: "ds-uid", Controller: ptr.To(true),
			}},
		},
		Spec:   corev1.PodSpec{NodeName: "worker-1", ServiceAccountName: "nodelet"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// csrPEM makes a CSR signed by key for the template.
func csrPEM(t *testing.T, key crypto.Signer, template *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
	if err != nil {
		t.Fatalf("creating a CSR: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func nodeSubject(cn string) pkix.Name {
	return pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}
}

func TestDecide(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p224Key, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	smallRSAKey, _ := rsa.GenerateKey(rand.Reader, 1024)
	goodSubject := nodeSubject("system:node:worker-1-nodelet")

	// The golden request: what nodelet's DaemonSet pod on worker-1 sends,
	// with its token bound to that pod, and the pod as read.
	base := func() Request {
		return Request{
			SignerName: SignerName,
			Username:   requester,
			Extra: map[string][]string{
				NodeNameExtra:                           {"worker-1"},
				PodNameExtra:                            {"nodelet-abcde"},
				PodUIDExtra:                             {"pod-uid-1"},
				"authentication.kubernetes.io/node-uid": {"node-uid-1"},
			},
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](86400),
			PEM:               csrPEM(t, ecKey, &x509.CertificateRequest{Subject: goodSubject}),
			Pod:               daemonSetPod(),
			DaemonSetUID:      "ds-uid",
		}
	}
	// boundToNode is the extras of a token bound straight to Node
	// worker-1: it names the node, and no pod.
	boundToNode := map[string][]string{
		NodeNameExtra:                           {"worker-1"},
		"authentication.kubernetes.io/node-uid": {"node-uid-1"},
	}
	tamperedSignature := func() []byte {
		block, _ := pem.Decode(base().PEM)
		der := append([]byte(nil), block.Bytes...)
		der[len(der)-3] ^= 0xff // inside the signature, the last field
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	}

	tests := map[string]struct {
		mutate      func(r *Request)
		wantApprove bool
		// wantReason is a part of the reason.
		wantReason string
	}{
		"the DaemonSet pod asks for its node's companion with an ECDSA key": {
			mutate:      func(*Request) {},
			wantApprove: true,
			wantReason:  "companion of node worker-1, where pod nodelet-system/nodelet-abcde of DaemonSet nodelet",
		},
		"an RSA key with key encipherment, as the kubelet asks": {
			mutate: func(r *Request) {
				r.PEM = csrPEM(t, rsaKey, &x509.CertificateRequest{Subject: goodSubject})
				r.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
			},
			wantApprove: true,
		},
		"an RSA key without key encipherment": {
			mutate:      func(r *Request) { r.PEM = csrPEM(t, rsaKey, &x509.CertificateRequest{Subject: goodSubject}) },
			wantApprove: true,
		},
		"an Ed25519 key": {
			mutate:      func(r *Request) { r.PEM = csrPEM(t, edKey, &x509.CertificateRequest{Subject: goodSubject}) },
			wantApprove: true,
		},
		"another signer": {
			mutate:     func(r *Request) { r.SignerName = certificatesv1.KubeAPIServerClientSignerName },
			wantReason: "its signer is",
		},
		"another requester": {
			mutate:     func(r *Request) { r.Username = "system:serviceaccount:default:default" },
			wantReason: "not by nodelet's ServiceAccount",
		},
		"the node itself renewing with its certificate": {
			mutate:     func(r *Request) { r.Username = "system:node:worker-1-nodelet" },
			wantReason: "not by nodelet's ServiceAccount",
		},
		"a token bound straight to the Node": {
			mutate:     func(r *Request) { r.Extra, r.Pod = boundToNode, nil },
			wantReason: "not bound to a pod",
		},
		"a token bound to nothing": {
			mutate:     func(r *Request) { r.Extra, r.Pod = nil, nil },
			wantReason: "not bound to a pod",
		},
		"a pod name without its UID": {
			mutate:     func(r *Request) { delete(r.Extra, PodUIDExtra) },
			wantReason: "not bound to a pod",
		},
		"two pod names": {
			mutate:     func(r *Request) { r.Extra[PodNameExtra] = []string{"nodelet-abcde", "nodelet-fghij"} },
			wantReason: "not bound to a pod",
		},
		"the pod no longer exists": {
			mutate:     func(r *Request) { r.Pod = nil },
			wantReason: "pod nodelet-system/nodelet-abcde, to which the requester's token is bound, does not exist",
		},
		"the pod was replaced by one of the same name": {
			mutate:     func(r *Request) { r.Pod.UID = "pod-uid-2" },
			wantReason: "it was replaced",
		},
		"another pod than the one named was read": {
			mutate:     func(r *Request) { r.Pod.Name = "nodelet-fghij" },
			wantReason: "the pod read is nodelet-system/nodelet-fghij",
		},
		"a pod in another namespace": {
			mutate:     func(r *Request) { r.Pod.Namespace = "default" },
			wantReason: "the pod read is default/nodelet-abcde",
		},
		"a pod of no controller": {
			mutate:     func(r *Request) { r.Pod.OwnerReferences = nil },
			wantReason: "not controlled by DaemonSet nodelet-system/nodelet (its controller: none)",
		},
		"a pod of another DaemonSet": {
			mutate:     func(r *Request) { r.Pod.OwnerReferences[0].Name = "other" },
			wantReason: "its controller: DaemonSet other of apps/v1",
		},
		"a pod of a ReplicaSet of the same name": {
			mutate:     func(r *Request) { r.Pod.OwnerReferences[0].Kind = "ReplicaSet" },
			wantReason: "not controlled by DaemonSet",
		},
		"a pod whose controller reference names the DaemonSet with another UID": {
			mutate:     func(r *Request) { r.Pod.OwnerReferences[0].UID = "forged-uid" },
			wantReason: "names DaemonSet nodelet with UID forged-uid as its controller, but the DaemonSet's UID is ds-uid",
		},
		"a pod controlled by a DaemonSet of that name that no longer exists": {
			mutate:     func(r *Request) { r.DaemonSetUID = "" },
			wantReason: "DaemonSet nodelet-system/nodelet, which pod nodelet-system/nodelet-abcde names as its controller, does not exist",
		},
		"a pod that names the DaemonSet as an owner but not as its controller": {
			mutate:     func(r *Request) { r.Pod.OwnerReferences[0].Controller = nil },
			wantReason: "not controlled by DaemonSet",
		},
		"a DaemonSet of another API group": {
			mutate:     func(r *Request) { r.Pod.OwnerReferences[0].APIVersion = "example.com/v1" },
			wantReason: "not controlled by DaemonSet",
		},
		"a pod running as another ServiceAccount": {
			mutate:     func(r *Request) { r.Pod.Spec.ServiceAccountName = "default" },
			wantReason: "runs as system:serviceaccount:nodelet-system:default",
		},
		"the pod runs on another node than the token names": {
			mutate:     func(r *Request) { r.Pod.Spec.NodeName = "worker-2" },
			wantReason: `runs on node "worker-2", not on worker-1`,
		},
		"the pod has finished": {
			mutate:     func(r *Request) { r.Pod.Status.Phase = corev1.PodFailed },
			wantReason: "has finished (phase Failed)",
		},
		"a pending pod, its nodelet not started yet, passes": {
			mutate:      func(r *Request) { r.Pod.Status.Phase = corev1.PodPending },
			wantApprove: true,
		},
		"a token bound to a pod but naming no node": {
			mutate:     func(r *Request) { delete(r.Extra, NodeNameExtra) },
			wantReason: "names no node",
		},
		"two node names": {
			mutate:     func(r *Request) { r.Extra[NodeNameExtra] = []string{"worker-1", "worker-2"} },
			wantReason: "names no node",
		},
		"an empty node name": {
			mutate:     func(r *Request) { r.Extra[NodeNameExtra] = []string{""} },
			wantReason: "names no node",
		},
		"no expirationSeconds: the signer's default lifetime": {
			mutate:     func(r *Request) { r.ExpirationSeconds = nil },
			wantReason: "sets no expirationSeconds",
		},
		"a lifetime longer than the policy's": {
			mutate:     func(r *Request) { r.ExpirationSeconds = ptr.To[int32](86401) },
			wantReason: "its expirationSeconds is 86401, more than the 86400 approved",
		},
		"a lifetime shorter than the policy's": {
			mutate:      func(r *Request) { r.ExpirationSeconds = ptr.To[int32](3600) },
			wantApprove: true,
			wantReason:  "for 3600 seconds at most",
		},
		"another node's companion (the pod runs on worker-1)": {
			mutate: func(r *Request) {
				r.PEM = csrPEM(t, ecKey, &x509.CertificateRequest{Subject: nodeSubject("system:node:worker-2-nodelet")})
			},
			wantReason: "not exactly CN=system:node:worker-1-nodelet",
		},
		"the host node itself, the kubelet's identity": {
			mutate: func(r *Request) {
				r.PEM = csrPEM(t, ecKey, &x509.CertificateRequest{Subject: nodeSubject("system:node:worker-1")})
			},
			wantReason: "not exactly",
		},
		"system:masters besides system:nodes": {
			mutate: func(r *Request) {
				subject := goodSubject
				subject.Organization = []string{"system:nodes", "system:masters"}
				r.PEM = csrPEM(t, ecKey, &x509.CertificateRequest{Subject: subject})
			},
			wantReason: "not exactly",
		},
		"an organisational unit besides": {
			mutate: func(r *Request) {
				subject := goodSubject
				subject.OrganizationalUnit = []string{"ops"}
				r.PEM = csrPEM(t, ecKey, &x509.CertificateRequest{Subject: subject})
			},
			wantReason: "not exactly",
		},
		"no organisation": {
			mutate: func(r *Request) {
				r.PEM = csrPEM(t, ecKey, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:worker-1-nodelet"}})
			},
			wantReason: "not exactly",
		},
		"subject alternative names": {
			mutate: func(r *Request) {
				r.PEM = csrPEM(t, ecKey, &x509.CertificateRequest{Subject: goodSubject, IPAddresses: []net.IP{net.ParseIP("10.0.0.1")}})
			},
			wantReason: "subject alternative names",
		},
		"server auth besides": {
			mutate: func(r *Request) {
				r.Usages = append(r.Usages, certificatesv1.UsageServerAuth)
			},
			wantReason: "its usages are",
		},
		"key encipherment with an ECDSA key": {
			mutate: func(r *Request) {
				r.Usages = append(r.Usages, certificatesv1.UsageKeyEncipherment)
			},
			wantReason: "its usages are",
		},
		"client auth only": {
			mutate:     func(r *Request) { r.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth} },
			wantReason: "its usages are",
		},
		"a usage twice": {
			mutate: func(r *Request) {
				r.Usages = append(r.Usages, certificatesv1.UsageClientAuth)
			},
			wantReason: "its usages are",
		},
		"a 1024-bit RSA key": {
			mutate:     func(r *Request) { r.PEM = csrPEM(t, smallRSAKey, &x509.CertificateRequest{Subject: goodSubject}) },
			wantReason: "fewer than 2048",
		},
		"an ECDSA key on P-224": {
			mutate:     func(r *Request) { r.PEM = csrPEM(t, p224Key, &x509.CertificateRequest{Subject: goodSubject}) },
			wantReason: "not P-256",
		},
		"a signature made with another key": {
			mutate:     func(r *Request) { r.PEM = tamperedSignature() },
			wantReason: "signature is not valid",
		},
		"not PEM": {
			mutate:     func(r *Request) { r.PEM = []byte("system:node:worker-1-nodelet") },
			wantReason: "not a PEM-encoded",
		},
		"a certificate instead of a request": {
			mutate: func(r *Request) {
				block, _ := pem.Decode(r.PEM)
				r.PEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: block.Bytes})
			},
			wantReason: "not a PEM-encoded",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := base()
			tc.mutate(&r)
			got := Decide(policy, r)
			if got.Approve != tc.wantApprove {
				t.Fatalf("Decide approved = %v, want %v (reason: %s)", got.Approve, tc.wantApprove, got.Reason)
			}
			if !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("Decide reason = %q, want it to say %q", got.Reason, tc.wantReason)
			}
		})
	}
}
