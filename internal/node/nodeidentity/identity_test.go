package nodeidentity

// These tests run against a real kube-apiserver and etcd (envtest), which
// has no controller-manager: the test itself plays the approver and the
// signer, with a CA of its own and certificates of a lifetime it chooses.

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
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

// testSigner approves and signs every CSR of the kubelet client signer
// with its CA, for lifetime, and remembers what it signed.
type testSigner struct {
	client   kubernetes.Interface
	ca       *x509.Certificate
	caKey    *ecdsa.PrivateKey
	lifetime time.Duration

	mu     sync.Mutex
	signed []*certificatesv1.CertificateSigningRequest
}

func newTestSigner(t *testing.T, client kubernetes.Interface, lifetime time.Duration) *testSigner {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "nodeidentity-test-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testSigner{client: client, ca: ca, caKey: key, lifetime: lifetime}
}

// run signs what comes until ctx ends.
func (s *testSigner) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		if err := s.signPending(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("test signer: %v", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *testSigner) signPending(ctx context.Context) error {
	csrs := s.client.CertificatesV1().CertificateSigningRequests()
	list, err := csrs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		csr := &list.Items[i]
		if csr.Spec.SignerName != SignerName || len(csr.Status.Certificate) > 0 {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "the test signs everything",
		})
		csr, err = csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		block, _ := pem.Decode(csr.Spec.Request)
		request, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			return err
		}
		serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
		now := time.Now()
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: serial,
			Subject:      request.Subject,
			NotBefore:    now,
			NotAfter:     now.Add(s.lifetime),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, s.ca, request.PublicKey, s.caKey)
		if err != nil {
			return err
		}
		csr.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if _, err := csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return err
		}
		s.mu.Lock()
		s.signed = append(s.signed, csr)
		s.mu.Unlock()
	}
	return nil
}

func (s *testSigner) signedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.signed)
}

// startSigner runs a test signer on a fresh API server until the test
// ends.
func startSigner(t *testing.T, lifetime time.Duration) (*rest.Config, *testSigner) {
	t.Helper()
	config := testenv.StartAPIServer(t)
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	signer := newTestSigner(t, client, lifetime)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); signer.run(ctx, t) }()
	t.Cleanup(func() { cancel(); <-done })
	return config, signer
}

func startIdentity(t *testing.T, ctx context.Context, config *rest.Config, dir string) *Identity {
	t.Helper()
	identity, err := Start(ctx, Options{NodeName: "worker-1-nodelet", Dir: dir, Bootstrap: config, Log: testr.New(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := identity.Wait(waitCtx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return identity
}

func TestObtainsStoresAndReusesTheCertificate(t *testing.T) {
	t.Parallel()
	config, signer := startSigner(t, time.Hour)
	dir := t.TempDir()

	ctx, stop := context.WithCancel(context.Background())
	first := startIdentity(t, ctx, config, dir).Current().Leaf
	stop()
	if first.Subject.CommonName != "system:node:worker-1-nodelet" || !slices.Equal(first.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("certificate subject = %s, want CN=system:node:worker-1-nodelet,O=system:nodes", first.Subject)
	}
	signer.mu.Lock()
	csr := signer.signed[0]
	signer.mu.Unlock()
	wantUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if !slices.Equal(csr.Spec.Usages, wantUsages) {
		t.Errorf("CSR usages = %v, want %v (an ECDSA key: no key encipherment)", csr.Spec.Usages, wantUsages)
	}
	if _, err := os.Stat(filepath.Join(dir, CertificatePrefix+"-current.pem")); err != nil {
		t.Errorf("the certificate is not stored: %v", err)
	}

	// A restart finds the valid certificate and uses it: no new request.
	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	again := startIdentity(t, ctx, config, dir).Current().Leaf
	if again.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Errorf("after a restart the certificate is serial %s, want the stored one, %s", again.SerialNumber, first.SerialNumber)
	}
	if n := signer.signedCount(); n != 1 {
		t.Errorf("%d certificates were signed, want 1: the restart requested another", n)
	}
}

// echoServer answers with the serial number of the client certificate
// the connection was made with.
func echoServer(t *testing.T, ca *x509.Certificate) *rest.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.TLS.PeerCertificates[0].SerialNumber.String())
	}))
	server.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	server.StartTLS()
	t.Cleanup(server.Close)
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw})
	return &rest.Config{Host: server.URL, TLSClientConfig: rest.TLSClientConfig{CAData: serverCA}, BearerToken: "not-sent"}
}

func TestRenewsBeforeExpiryAndTheClientUsesTheNewCertificate(t *testing.T) {
	t.Parallel()
	// Renewed at 70 to 90% of 45s: 31 to 41s in.
	const lifetime = 45 * time.Second
	config, signer := startSigner(t, lifetime)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	identity := startIdentity(t, ctx, config, t.TempDir())
	identity.rotationCheck = 100 * time.Millisecond
	first := identity.Current().Leaf

	// The node's client, against a server that tells which certificate
	// it was shown.
	identity.server = echoServer(t, signer.ca)
	nodeConfig, err := identity.RESTConfig(ctx)
	if err != nil {
		t.Fatalf("RESTConfig: %v", err)
	}
	httpClient, err := rest.HTTPClientFor(nodeConfig)
	if err != nil {
		t.Fatal(err)
	}
	shown := func(ctx context.Context) (string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, nodeConfig.Host, nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return string(body), err
	}
	if got, err := shown(ctx); err != nil || got != first.SerialNumber.String() {
		t.Fatalf("the client showed certificate %q (%v), want the first one, %s", got, err, first.SerialNumber)
	}

	err = await.Poll(ctx, lifetime+time.Minute, await.Condition(func(context.Context) (bool, error) {
		current := identity.Current()
		return current != nil && current.Leaf.SerialNumber.Cmp(first.SerialNumber) != 0, nil
	}))
	if err != nil {
		t.Fatalf("waiting for the renewed certificate: %v", err)
	}
	renewedAt := time.Now()
	if renewedAt.After(first.NotAfter) {
		t.Errorf("the certificate was renewed at %s, after it expired at %s", renewedAt, first.NotAfter)
	}
	renewed := identity.Current().Leaf
	// The connection made with the first certificate is closed: the
	// next request shows the renewed one.
	err = await.Poll(ctx, 30*time.Second, await.Condition(func(ctx context.Context) (bool, error) {
		got, err := shown(ctx)
		return got == renewed.SerialNumber.String(), err
	}))
	if err != nil {
		t.Errorf("waiting for the client to show the renewed certificate %s: %v", renewed.SerialNumber, err)
	}
}
