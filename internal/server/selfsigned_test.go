package server

import (
	"crypto/x509"
	"testing"
)

func TestSelfSignedCertificateIsKept(t *testing.T) {
	dir := t.TempDir()
	first, err := loadOrGenerateSelfSigned(dir, "n1", []string{"10.0.0.7"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(first.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("n1"); err != nil {
		t.Errorf("the certificate does not name the node: %v", err)
	}
	if err := leaf.VerifyHostname("10.0.0.7"); err != nil {
		t.Errorf("the certificate does not name the node's IP: %v", err)
	}
	again, err := loadOrGenerateSelfSigned(dir, "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(again.Certificate[0]) != string(first.Certificate[0]) {
		t.Errorf("a restart made a new certificate instead of keeping the one in %s", dir)
	}
}
