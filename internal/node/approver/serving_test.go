package approver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"net/url"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var servingPolicy = ServingPolicy{NodeNameSuffix: "-nodelet", MaxExpirationSeconds: 86400}

// companionNode is the companion Node worker-1-nodelet as nodelet
// registers it: the host's address, the host's name.
func companionNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1-nodelet"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
			{Type: corev1.NodeHostName, Address: "worker-1"},
		}},
	}
}

func TestDecideServing(t *testing.T) {
	ecKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	const user = "system:node:worker-1-nodelet"
	template := func(mutate func(*x509.CertificateRequest)) *x509.CertificateRequest {
		csr := &x509.CertificateRequest{
			Subject:     nodeSubject(user),
			DNSNames:    []string{"worker-1-nodelet"},
			IPAddresses: []net.IP{net.ParseIP("10.0.0.7")},
		}
		if mutate != nil {
			mutate(csr)
		}
		return csr
	}
	// The golden request: what nodelet's serving certificate manager
	// sends as the companion node.
	base := func() ServingRequest {
		return ServingRequest{
			SignerName:        ServingSignerName,
			Username:          user,
			Groups:            []string{"system:nodes", "system:authenticated"},
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			ExpirationSeconds: ptr.To[int32](86400),
			PEM:               csrPEM(t, ecKey, template(nil)),
			Node:              companionNode(),
		}
	}
	withCSR := func(mutate func(*x509.CertificateRequest)) func(*ServingRequest) {
		return func(r *ServingRequest) { r.PEM = csrPEM(t, ecKey, template(mutate)) }
	}

	tests := map[string]struct {
		mutate      func(r *ServingRequest)
		wantApprove bool
		wantReason  string
		// wantRetry: the Node may yet allow it.
		wantRetry bool
	}{
		"the companion asks to serve as itself": {
			mutate:      func(*ServingRequest) {},
			wantApprove: true,
			wantReason:  "companion node worker-1-nodelet asks to serve as itself",
		},
		"its host name, as its status lists it": {
			mutate:      withCSR(func(c *x509.CertificateRequest) { c.DNSNames = append(c.DNSNames, "worker-1") }),
			wantApprove: true,
		},
		"an RSA key with key encipherment": {
			mutate: func(r *ServingRequest) {
				r.PEM = csrPEM(t, rsaKey, template(nil))
				r.Usages = append(r.Usages, certificatesv1.UsageKeyEncipherment)
			},
			wantApprove: true,
		},
		"a kubelet's node, without the suffix": {
			mutate: func(r *ServingRequest) {
				r.Username = "system:node:worker-1"
				r.PEM = csrPEM(t, ecKey, template(func(c *x509.CertificateRequest) { c.Subject = nodeSubject("system:node:worker-1") }))
			},
			wantReason: "not by a companion node",
		},
		"the suffix alone": {
			mutate:     func(r *ServingRequest) { r.Username = "system:node:-nodelet" },
			wantReason: "not by a companion node",
		},
		"a ServiceAccount": {
			mutate:     func(r *ServingRequest) { r.Username = "system:serviceaccount:nodelet-system:nodelet" },
			wantReason: "not by a companion node",
		},
		"a requester not in system:nodes": {
			mutate:     func(r *ServingRequest) { r.Groups = []string{"system:authenticated"} },
			wantReason: "not in group system:nodes",
		},
		"another signer": {
			mutate:     func(r *ServingRequest) { r.SignerName = SignerName },
			wantReason: "its signer is",
		},
		"no lifetime": {
			mutate:     func(r *ServingRequest) { r.ExpirationSeconds = nil },
			wantReason: "sets no expirationSeconds",
		},
		"a longer lifetime": {
			mutate:     func(r *ServingRequest) { r.ExpirationSeconds = ptr.To[int32](86401) },
			wantReason: "more than the 86400 approved",
		},
		"another node's subject": {
			mutate:     withCSR(func(c *x509.CertificateRequest) { c.Subject = nodeSubject("system:node:worker-2-nodelet") }),
			wantReason: "not exactly CN=system:node:worker-1-nodelet",
		},
		"another organization": {
			mutate: withCSR(func(c *x509.CertificateRequest) {
				c.Subject = pkix.Name{CommonName: user, Organization: []string{"system:masters"}}
			}),
			wantReason: "not exactly CN=",
		},
		"an IP address that is not the Node's": {
			mutate:     withCSR(func(c *x509.CertificateRequest) { c.IPAddresses = append(c.IPAddresses, net.ParseIP("10.96.0.1")) }),
			wantReason: "IP address 10.96.0.1, which is not one of node worker-1-nodelet's addresses",
			wantRetry:  true,
		},
		"a DNS name that is not the Node's": {
			mutate:     withCSR(func(c *x509.CertificateRequest) { c.DNSNames = []string{"kubernetes.default.svc"} }),
			wantReason: `DNS name "kubernetes.default.svc", which is not node worker-1-nodelet's name`,
			wantRetry:  true,
		},
		"another node's name": {
			mutate:     withCSR(func(c *x509.CertificateRequest) { c.DNSNames = []string{"worker-2-nodelet"} }),
			wantReason: `DNS name "worker-2-nodelet"`,
			wantRetry:  true,
		},
		"a URI": {
			mutate: withCSR(func(c *x509.CertificateRequest) {
				c.URIs = []*url.URL{{Scheme: "spiffe", Host: "cluster.local", Path: "/ns/default"}}
			}),
			wantReason: "e-mail or URI",
		},
		"no name at all": {
			mutate:     withCSR(func(c *x509.CertificateRequest) { c.DNSNames, c.IPAddresses = nil, nil }),
			wantReason: "names no DNS name or IP address",
		},
		"a Node that does not exist": {
			mutate:     func(r *ServingRequest) { r.Node = nil },
			wantReason: "does not exist",
			wantRetry:  true,
		},
		"client auth": {
			mutate:     func(r *ServingRequest) { r.Usages = append(r.Usages, certificatesv1.UsageClientAuth) },
			wantReason: "its usages are",
		},
		"key encipherment with an ECDSA key": {
			mutate:     func(r *ServingRequest) { r.Usages = append(r.Usages, certificatesv1.UsageKeyEncipherment) },
			wantReason: "its usages are",
		},
		"no server auth": {
			mutate:     func(r *ServingRequest) { r.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature} },
			wantReason: "its usages are",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := base()
			tc.mutate(&r)
			got := DecideServing(servingPolicy, r)
			if got.Approve != tc.wantApprove {
				t.Fatalf("DecideServing approved = %v, want %v (reason: %s)", got.Approve, tc.wantApprove, got.Reason)
			}
			if !strings.Contains(got.Reason, tc.wantReason) {
				t.Errorf("DecideServing reason = %q, want it to say %q", got.Reason, tc.wantReason)
			}
			if got.Retry != tc.wantRetry {
				t.Errorf("DecideServing retry = %v, want %v (reason: %s)", got.Retry, tc.wantRetry, got.Reason)
			}
		})
	}
}

func TestCompanionNodeName(t *testing.T) {
	for username, want := range map[string]string{
		"system:node:worker-1-nodelet":               "worker-1-nodelet",
		"system:node:worker-1":                       "",
		"system:node:-nodelet":                       "",
		"worker-1-nodelet":                           "",
		"system:serviceaccount:ns:worker-1-nodelet":  "",
		"system:node:worker-1-nodelet-nodelet":       "worker-1-nodelet-nodelet",
		"system:node:worker-1-nodelet.example.local": "",
	} {
		got, ok := CompanionNodeName(username, "-nodelet")
		if got != want || ok != (want != "") {
			t.Errorf("CompanionNodeName(%q) = %q, %v; want %q", username, got, ok, want)
		}
	}
}
