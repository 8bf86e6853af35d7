package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// replaceFile puts data at path as a certificate tool or a Secret volume
// does: written beside it, then renamed over it.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// selfSigned is a self-signed certificate and key, PEM, for host.
func selfSigned(t *testing.T, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func servedHost(t *testing.T, s *servingCertificate) string {
	t.Helper()
	cert, err := s.get(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatalf("no serving certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.DNSNames[0]
}

// The files are real, and so is inotify; no API server is needed.
func TestServingCertificateFilesAreReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certPEM, keyPEM := selfSigned(t, "first.example")
	replaceFile(t, certFile, certPEM)
	replaceFile(t, keyFile, keyPEM)
	s, err := newServingCertificate(TLSOptions{CertFile: certFile, KeyFile: keyFile}, testNode, func() []string { return nil }, nil, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := servedHost(t, s); got != "first.example" {
		t.Fatalf("serving %s, want first.example", got)
	}
	s.start(t.Context(), clock.RealClock{})

	// The key first, then the certificate: in between, the pair does not
	// match, and the first one is served on.
	certPEM, keyPEM = selfSigned(t, "second.example")
	replaceFile(t, keyFile, keyPEM)
	if changed, err := s.reloader.check(); err == nil || changed {
		t.Errorf("a certificate and a key that do not match loaded (changed %v, err %v)", changed, err)
	}
	if got := servedHost(t, s); got != "first.example" {
		t.Errorf("serving %s with a key that matches no certificate, want first.example kept", got)
	}
	replaceFile(t, certFile, certPEM)
	await.Eventually(t, 10*time.Second, "the new certificate served", func(ctx context.Context) error {
		if got := servedHost(t, s); got != "second.example" {
			return fmt.Errorf("serving %s", got)
		}
		return nil
	})

	// A file that does not parse keeps the last good certificate.
	replaceFile(t, certFile, []byte("not a certificate"))
	if _, err := s.reloader.check(); err == nil {
		t.Error("a certificate file that does not parse loaded")
	}
	if got := servedHost(t, s); got != "second.example" {
		t.Errorf("serving %s after a bad file, want second.example kept", got)
	}
}

func TestServingCertificateFilesMustLoadAtStart(t *testing.T) {
	dir := t.TempDir()
	_, err := newServingCertificate(TLSOptions{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: filepath.Join(dir, "missing.key")},
		testNode, func() []string { return nil }, nil, testr.New(t))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing files: %v, want a not-exist error", err)
	}
}

func caPEM(ca *testCA) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

func TestClientCAFileIsReloaded(t *testing.T) {
	oldCA, newCA := newTestCA(t), newTestCA(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	replaceFile(t, caFile, caPEM(oldCA))
	a, err := newAuthenticator(AuthOptions{ClientCAFile: caFile}, nil, clock.RealClock{}, testr.New(t))
	if err != nil {
		t.Fatal(err)
	}
	leafOf := func(ca *testCA) []*x509.Certificate {
		cert := ca.clientCert(t, "alice", "team")
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{leaf}
	}
	oldClient, newClient := leafOf(oldCA), leafOf(newCA)
	if _, err := a.fromCertificate(oldClient); err != nil {
		t.Fatalf("the first CA's client refused: %v", err)
	}
	if _, err := a.fromCertificate(newClient); err == nil {
		t.Fatal("a client of a CA not in the file admitted")
	}
	a.start(t.Context(), clock.RealClock{})

	replaceFile(t, caFile, caPEM(newCA))
	await.Eventually(t, 10*time.Second, "the new CA's client admitted", func(ctx context.Context) error {
		_, err := a.fromCertificate(newClient)
		return err
	})
	if _, err := a.fromCertificate(oldClient); err == nil {
		t.Error("a client of the CA taken out of the file still admitted")
	}

	// A file with no certificate keeps the CAs loaded before.
	replaceFile(t, caFile, []byte("# being rewritten\n"))
	if _, err := a.caReloader.check(); err == nil {
		t.Error("a client CA file with no certificate loaded")
	}
	if _, err := a.fromCertificate(newClient); err != nil {
		t.Errorf("the last good CA dropped after a bad file: %v", err)
	}
}

// Unchanged files are not loaded again; every change is.
func TestFileReloaderLoadsChangesOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	replaceFile(t, path, []byte("one"))
	var loads []string
	f := newFileReloader("test", []string{path}, func(files [][]byte) error {
		loads = append(loads, string(files[0]))
		return nil
	}, testr.New(t))
	for _, step := range []struct {
		write       string
		wantChanged bool
	}{{"", true}, {"", false}, {"two", true}, {"two", false}, {"one", true}} {
		if step.write != "" {
			replaceFile(t, path, []byte(step.write))
		}
		changed, err := f.check()
		if err != nil || changed != step.wantChanged {
			t.Errorf("after writing %q: changed %v, err %v; want changed %v", step.write, changed, err, step.wantChanged)
		}
	}
	if want := []string{"one", "two", "one"}; fmt.Sprint(loads) != fmt.Sprint(want) {
		t.Errorf("loaded %q, want %q", loads, want)
	}
}
