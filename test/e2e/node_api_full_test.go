//go:build full

package e2e

import (
	"context"
	"crypto/x509"
	"net"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
