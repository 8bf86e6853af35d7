package nodeidentity

// Pure tests (no API server): whether a kubeconfig's certificate is the
// node's, what LoadHostCredentials reads and writes in a folder, and with
// which credentials a certificate is requested.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"

	"github.com/nodelet/nodelet/internal/node/nodeuser"
)

var testNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// selfSigned is a key and certificate for the common name, valid from
// notBefore to notAfter, PEM-encoded.
func selfSigned(t *testing.T, commonName string, notBefore, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(7),
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{nodeuser.Group}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, &x509.Certificate{Subject: pkix.Name{CommonName: "ca"}}, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM
}

func TestCertificateUsable(t *testing.T) {
	valid, validKey := selfSigned(t, "system:node:host-1", testNow.Add(-time.Hour), testNow.Add(time.Hour))
	_, otherKey := selfSigned(t, "system:node:host-1", testNow.Add(-time.Hour), testNow.Add(time.Hour))
	expired, expiredKey := selfSigned(t, "system:node:host-1", testNow.Add(-2*time.Hour), testNow)
	future, futureKey := selfSigned(t, "system:node:host-1", testNow.Add(time.Minute), testNow.Add(time.Hour))
	another, anotherKey := selfSigned(t, "system:node:host-2", testNow.Add(-time.Hour), testNow.Add(time.Hour))
	tests := map[string]struct {
		cert, key []byte
		// wantReason is in the error; "" wants none.
		wantReason string
	}{
		"a valid certificate of the node":         {cert: valid, key: validKey},
		"no certificate (a token kubeconfig)":     {wantReason: "holds no client certificate"},
		"a certificate with another key":          {cert: valid, key: otherKey, wantReason: "not a usable pair"},
		"a certificate without its key":           {cert: valid, wantReason: "not a usable pair"},
		"a certificate that expires now":          {cert: expired, key: expiredKey, wantReason: "expired at 2026-11-26T12:00:00Z"},
		"a certificate not valid yet":             {cert: future, key: futureKey, wantReason: "not valid before 2026-11-26T12:01:00Z"},
		"another node's certificate (a new name)": {cert: another, key: anotherKey, wantReason: `is for "system:node:host-2", not "system:node:host-1"`},
		"a certificate that is not PEM":           {cert: []byte("not PEM"), key: validKey, wantReason: "not a usable pair"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := CertificateUsable(tc.cert, tc.key, "host-1", testNow)
			switch {
			case tc.wantReason == "" && err != nil:
				t.Errorf("CertificateUsable = %v, want usable", err)
			case tc.wantReason != "" && (err == nil || !strings.Contains(err.Error(), tc.wantReason)):
				t.Errorf("CertificateUsable = %v, want a reason saying %q", err, tc.wantReason)
			}
		})
	}
}

func TestCertificateRequestIsTheKubeletsClientRequest(t *testing.T) {
	got := CertificateRequest("host-1")
	if got.Subject.CommonName != "system:node:host-1" || len(got.Subject.Organization) != 1 || got.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject = %s, want CN=system:node:host-1,O=system:nodes", got.Subject)
	}
	if len(got.DNSNames)+len(got.IPAddresses)+len(got.EmailAddresses)+len(got.URIs) != 0 {
		t.Errorf("the request names %v %v %v %v, want no alternative names (the csrapproving controller refuses them)",
			got.DNSNames, got.IPAddresses, got.EmailAddresses, got.URIs)
	}
}

// writeKubeconfig writes a kubeconfig for server with a token or a
// client certificate and key given as data.
func writeKubeconfig(t *testing.T, path string, auth *clientcmdapi.AuthInfo) {
	t.Helper()
	err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://api.example:6443", CertificateAuthorityData: []byte("the CA")}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": auth},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	}, path)
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoadHostCredentialsBootstrapsAndWritesTheKubeconfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig, bootstrap, certDir := filepath.Join(dir, "etc", "nodelet.kubeconfig"), filepath.Join(dir, "bootstrap"), filepath.Join(dir, "pki")
	writeKubeconfig(t, bootstrap, &clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"})

	creds, err := LoadHostCredentials(kubeconfig, bootstrap, certDir, "host-1", testNow)
	if err != nil {
		t.Fatalf("LoadHostCredentials: %v", err)
	}
	if creds.Bootstrapping != "it does not exist" {
		t.Errorf("Bootstrapping = %q, want the missing kubeconfig's reason", creds.Bootstrapping)
	}
	if creds.Bootstrap == nil || creds.Bootstrap.BearerToken != "abcdef.0123456789abcdef" {
		t.Errorf("the bootstrap credentials are %+v, want the bootstrap token", creds.Bootstrap)
	}
	if creds.Server.BearerToken != "" || creds.Server.Host != "https://api.example:6443" || string(creds.Server.CAData) != "the CA" {
		t.Errorf("server = %s with CA %q and token %q, want the bootstrap kubeconfig's server and CA without its token",
			creds.Server.Host, creds.Server.CAData, creds.Server.BearerToken)
	}
	// The kubeconfig written points at the certificate to come.
	written, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("the kubeconfig written: %v", err)
	}
	auth := written.AuthInfos[written.Contexts[written.CurrentContext].AuthInfo]
	cluster := written.Clusters[written.Contexts[written.CurrentContext].Cluster]
	want := filepath.Join(certDir, "nodelet-client-current.pem")
	if auth.ClientCertificate != want || auth.ClientKey != want || auth.Token != "" {
		t.Errorf("the kubeconfig's user is %+v, want the certificate and key %s only", auth, want)
	}
	if cluster.Server != "https://api.example:6443" || string(cluster.CertificateAuthorityData) != "the CA" {
		t.Errorf("the kubeconfig's cluster is %+v, want the bootstrap kubeconfig's", cluster)
	}

	// Once the certificate is there, the kubeconfig is the node's, and
	// the bootstrap kubeconfig may be gone.
	cert, key := selfSigned(t, "system:node:host-1", testNow.Add(-time.Hour), testNow.Add(time.Hour))
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, append(cert, key...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bootstrap); err != nil {
		t.Fatal(err)
	}
	creds, err = LoadHostCredentials(kubeconfig, bootstrap, certDir, "host-1", testNow)
	if err != nil {
		t.Fatalf("LoadHostCredentials with the certificate there: %v", err)
	}
	if creds.Bootstrapping != "" || creds.Bootstrap != nil || string(creds.InitialCertificatePEM) != string(cert) {
		t.Errorf("got bootstrapping %q, bootstrap %v, initial certificate %d bytes; want the kubeconfig's certificate and no bootstrap",
			creds.Bootstrapping, creds.Bootstrap, len(creds.InitialCertificatePEM))
	}

	// Expired, and no bootstrap kubeconfig: nodelet cannot go on.
	_, err = LoadHostCredentials(kubeconfig, bootstrap, certDir, "host-1", testNow.Add(2*time.Hour))
	if err == nil || !strings.Contains(err.Error(), "expired at") || !strings.Contains(err.Error(), "bootstrap kubeconfig") {
		t.Errorf("LoadHostCredentials with an expired certificate and no bootstrap kubeconfig = %v, want an error naming both", err)
	}
}

func TestLoadHostCredentialsReplacesATokenKubeconfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig, bootstrap := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "bootstrap")
	writeKubeconfig(t, kubeconfig, &clientcmdapi.AuthInfo{Token: "a-static-token"})
	writeKubeconfig(t, bootstrap, &clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"})
	creds, err := LoadHostCredentials(kubeconfig, bootstrap, filepath.Join(dir, "pki"), "host-1", testNow)
	if err != nil {
		t.Fatalf("LoadHostCredentials: %v", err)
	}
	if creds.Bootstrapping != "it holds no client certificate" {
		t.Errorf("Bootstrapping = %q, want the token kubeconfig's reason", creds.Bootstrapping)
	}
	written, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range written.AuthInfos {
		if auth.Token != "" {
			t.Errorf("the kubeconfig still holds a token: %+v", auth)
		}
	}
}

func TestRequestsUseTheNodesCertificateOnlyForRenewalsOnAHost(t *testing.T) {
	server := &rest.Config{Host: "https://api.example:6443", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("the CA")}}
	bootstrap := &rest.Config{Host: server.Host, BearerToken: "abcdef.0123456789abcdef"}
	certPEM, keyPEM := selfSigned(t, "system:node:host-1", testNow.Add(-time.Hour), testNow.Add(time.Hour))
	current, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		creds   requestCredentials
		current *tls.Certificate
		// wantCertificate: the node's certificate; else wantToken.
		wantCertificate bool
		wantToken       string
		wantErr         string
	}{
		"a host's first request: the bootstrap token": {
			creds: requestCredentials{server: server, bootstrap: bootstrap, renewWithCertificate: true}, wantToken: bootstrap.BearerToken,
		},
		"a host's renewal: the node's certificate": {
			creds: requestCredentials{server: server, bootstrap: bootstrap, renewWithCertificate: true}, current: &current, wantCertificate: true,
		},
		"a DaemonSet pod's renewal: its token still": {
			creds: requestCredentials{server: server, bootstrap: bootstrap}, current: &current, wantToken: bootstrap.BearerToken,
		},
		"an expired certificate and no bootstrap kubeconfig": {
			creds: requestCredentials{server: server, renewWithCertificate: true}, wantErr: "no bootstrap credentials",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.creds.configFor(tc.current)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("configFor = %v, want an error saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("configFor: %v", err)
			}
			if tc.wantCertificate {
				if got.BearerToken != "" || string(got.CertData) != string(certPEM) || string(got.KeyData) != string(keyPEM) || string(got.CAData) != "the CA" {
					t.Errorf("config has token %q, certificate %d bytes, CA %q; want the node's certificate and key alone, and the server's CA",
						got.BearerToken, len(got.CertData), got.CAData)
				}
				return
			}
			if got.BearerToken != tc.wantToken || len(got.CertData) != 0 {
				t.Errorf("config has token %q and a %d-byte certificate, want the token %q alone", got.BearerToken, len(got.CertData), tc.wantToken)
			}
		})
	}
}
