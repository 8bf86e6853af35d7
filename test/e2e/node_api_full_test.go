//go:build full

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
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestServingCertificateFromTheCertificatesAPI restarts nodelet, so it
// must run alone: it does not call t.Parallel (see main_test.go). The e2e
// stack's controller-manager signs for 2 minutes, backdated 5: nodelet
// asks for the next certificate within a minute of getting one.
func TestServingCertificateFromTheCertificatesAPI(t *testing.T) {
	since := time.Now()
	f.restartNodeletWith(t, "--rotate-server-certificates", "--cert-dir="+t.TempDir())
	t.Cleanup(func() {
		// The suite's CSRs go with it.
		csrs, _ := f.servingCSRs(context.Background(), since)
		for _, csr := range csrs {
			_ = f.Client.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), csr.Name, metav1.DeleteOptions{})
		}
	})
	seen := map[string]bool{}

	// Before any approval, nodelet has no certificate to serve with.
	await.Eventually(t, 30*time.Second, "nodelet's first certificate signing request", await.Condition(func(ctx context.Context) (bool, error) {
		csrs, err := f.servingCSRs(ctx, since)
		return len(csrs) > 0, err
	}))
	if served, err := f.servedCertificate(t.Context()); err == nil {
		t.Errorf("nodelet serves certificate %s before its request was approved", serial(served))
	}

	first := f.approveNext(t, since, seen, 30*time.Second)
	f.waitForServed(t, first, "the first certificate")
	ca, err := os.ReadFile(f.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	if _, err := first.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSName: f.Env.NodeName}); err != nil {
		t.Errorf("the served certificate does not verify as the node's serving certificate: %v", err)
	}
	if len(first.IPAddresses) == 0 || !first.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("the served certificate names IPs %v, want the node's 127.0.0.1", first.IPAddresses)
	}
	// The API server still reaches the node (it does not check the
	// serving certificate).
	pod := f.createPod(t, newPod(f.NewNamespace(t), "talker").withShell("echo hello; sleep 3600").obj())
	f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogs(t, "hello\n", pod.Namespace, "talker")

	// Before the first one expires, nodelet asks for the next.
	second := f.approveNext(t, since, seen, 2*time.Minute)
	servedAt := f.waitForServed(t, second, "the renewed certificate")
	if !servedAt.Before(first.NotAfter) {
		t.Errorf("the renewed certificate was served at %s, after the first expired at %s", servedAt, first.NotAfter)
	}
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Errorf("the renewed certificate is the first one")
	}
}

// TestCertificateFilesAreReloaded restarts nodelet with its serving
// certificate and client CA given as files, then replaces them as a
// certificate tool does (written beside, renamed over): the next
// handshakes see the new certificate, and a client of a CA added to the
// file is let in, with no restart. Alone, as the test above.
func TestCertificateFilesAreReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, caFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")
	replace := func(path string, data []byte) {
		t.Helper()
		if err := os.WriteFile(path+".new", data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	servingPair := func() (*x509.Certificate, []byte, []byte) {
		t.Helper()
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(f.Env.NodeName, []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(certPEM)
		leaf, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return leaf, certPEM, keyPEM
	}
	first, certPEM, keyPEM := servingPair()
	replace(certFile, certPEM)
	replace(keyFile, keyPEM)
	stackCA, err := os.ReadFile(f.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	replace(caFile, stackCA)
	f.restartNodeletWith(t, "--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile, "--client-ca-file="+caFile)
	f.waitForServed(t, first, "the certificate file")

	// A client of a CA nodelet does not know yet: not authenticated.
	newCA, newCAPEM := e2eCA(t)
	client := newCA.clientCertificate(t, "e2e-reload-client")
	if code, body, err := f.nodeAPI(t.Context(), "/healthz", client, ""); err != nil || code != 401 {
		t.Fatalf("GET /healthz as a client of an unknown CA: %d %q %v, want 401", code, body, err)
	}

	// The key first, then the certificate, as a tool writes them.
	second, certPEM, keyPEM := servingPair()
	replace(keyFile, keyPEM)
	replace(certFile, certPEM)
	f.waitForServed(t, second, "the replaced certificate file")

	// The stack's CA and the new one: the new client is now known, and
	// refused only for want of rights (403 naming it, not 401).
	replace(caFile, append(append([]byte{}, stackCA...), newCAPEM...))
	await.Eventually(t, time.Minute, "a client of the CA added to the file to be authenticated", func(ctx context.Context) error {
		code, body, err := f.nodeAPI(ctx, "/healthz", client, "")
		if err != nil {
			return err
		}
		if code != 403 || !strings.Contains(string(body), "user=e2e-reload-client") {
			return fmt.Errorf("GET /healthz: %d %q, want 403 for user e2e-reload-client", code, body)
		}
		return nil
	})
	// The stack's own client still is.
	if code, body, err := f.nodeAPI(t.Context(), "/healthz", f.kubeletClientCert(t), ""); err != nil || code != 200 {
		t.Errorf("GET /healthz as the API server's client: %d %q %v, want 200", code, body, err)
	}
}

// e2eCAKey is a CA of the test's.
type e2eCAKey struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// e2eCA makes a CA, returning it and its certificate as PEM.
func e2eCA(t *testing.T) (*e2eCAKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e-reload-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &e2eCAKey{cert: cert, key: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// clientCertificate is a client certificate of the CA for user.
func (ca *e2eCAKey) clientCertificate(t *testing.T, user string) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: user},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
