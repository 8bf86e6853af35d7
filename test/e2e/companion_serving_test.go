package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// checkServingCertificateFromSigner: the companion's node port serves a
// certificate the cluster's signer (the controller-manager, with the
// stack's CA) issued for the companion Node, its name and the host's
// address, through a CSR the chart's approver approved; by default, with
// no value set for it.
func checkServingCertificateFromSigner(t *testing.T, host hostEnv, r companionRelease) {
	ca, err := os.ReadFile(f.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("no certificate in the stack's CA file %s", f.Env.CAFile)
	}
	address := net.JoinHostPort(host.NodeIP, strconv.Itoa(r.daemonPort))
	var leaf *x509.Certificate
	// The handshake verifies the chain to the stack's CA and the name.
	await.Eventually(t, 2*time.Minute, "the companion's port to serve a certificate of the stack's CA for "+r.node, func(ctx context.Context) error {
		dialer := &tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: r.node}}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		conn, err := dialer.DialContext(ctx, "tcp", address)
		if err != nil {
			return err
		}
		defer conn.Close()
		leaf = conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
		return nil
	})
	if want := "system:node:" + r.node; leaf.Subject.CommonName != want || !slices.Equal(leaf.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("the served certificate's subject is %s, want CN=%s,O=system:nodes", leaf.Subject, want)
	}
	if err := leaf.VerifyHostname(host.NodeIP); err != nil {
		t.Errorf("the served certificate does not name the companion's address: %v", err)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("the served certificate's extended usages are %v, want server auth only", leaf.ExtKeyUsage)
	}
	if life := leaf.NotAfter.Sub(leaf.NotBefore); life > 25*time.Hour {
		t.Errorf("the served certificate lasts %s, more than the day nodelet asks for", life)
	}
	csrs, err := f.Client.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	approved := false
	for _, csr := range csrs.Items {
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || csr.Spec.Username != "system:node:"+r.node {
			continue
		}
		for _, c := range csr.Status.Conditions {
			approved = approved || (c.Type == certificatesv1.CertificateApproved && c.Reason == "NodeletAutoApproved")
		}
	}
	if !approved {
		t.Errorf("no kubelet-serving CSR of %s approved by nodelet-approver", r.node)
	}
}

// checkBadServingRequestsPending: serving certificate requests a
// companion may not have are left pending by the approver, which says
// why: the companion asking for an address that is not its Node's, and
// a node without the chart's suffix (a kubelet's). The requests are made
// as those nodes' users, impersonated by the stack's admin.
func checkBadServingRequestsPending(t *testing.T, host hostEnv, r companionRelease) {
	bad := map[string]struct {
		user       string
		ip         string
		wantReason string
	}{
		r.namespace + "-foreign-ip": {"system:node:" + r.node, "192.0.2.1", "IP address 192.0.2.1, which is not one of node " + r.node + "'s addresses"},
		r.namespace + "-kubelet":    {"system:node:" + host.NodeName, host.NodeIP, "not by a companion node"},
	}
	for name, b := range bad {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: b.user, Organization: []string{"system:nodes"}},
			DNSNames:    []string{strings.TrimPrefix(b.user, "system:node:")},
			IPAddresses: []net.IP{net.ParseIP(b.ip)},
		}, key)
		if err != nil {
			t.Fatal(err)
		}
		_, err = impersonating(t, b.user, "system:nodes").CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
				SignerName:        certificatesv1.KubeletServingSignerName,
				Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
				ExpirationSeconds: ptr.To[int32](3600),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating CSR %s as %s: %v", name, b.user, err)
		}
		t.Cleanup(func() {
			_ = f.Client.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
	}
	// The approver's log says it judged each, and why it left it.
	for name, b := range bad {
		await.Eventually(t, time.Minute, "the approver to leave CSR "+name+" pending", func(ctx context.Context) error {
			logs, stderr, err := f.kubectl(ctx, nil, "logs", "-n", r.namespace, "--tail=-1", "--prefix",
				"-l", "app.kubernetes.io/instance="+r.name+",app.kubernetes.io/component=approver")
			if err != nil {
				return fmt.Errorf("kubectl logs: %w: %s", err, stderr)
			}
			for _, line := range strings.Split(logs, "\n") {
				if strings.Contains(line, `"csr":"`+name+`"`) && strings.Contains(line, "Left the certificate signing request pending") {
					if !strings.Contains(line, b.wantReason) {
						return fmt.Errorf("left pending for another reason than %q: %s", b.wantReason, line)
					}
					return nil
				}
			}
			return fmt.Errorf("no line of the approver's log leaves CSR %s pending", name)
		})
		csr, err := f.Client.CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(csr.Status.Conditions) > 0 || len(csr.Status.Certificate) > 0 {
			t.Errorf("CSR %s of %s: conditions %v, a certificate of %d bytes; want it pending", name, b.user, csr.Status.Conditions, len(csr.Status.Certificate))
		}
	}
}

// impersonating is a client of the stack's admin acting as user in groups.
func impersonating(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	config, err := clientcmd.BuildConfigFromFlags("", f.Env.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return kubernetes.NewForConfigOrDie(config)
}
