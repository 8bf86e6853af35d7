package nodeidentity

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodelet/nodelet/internal/node/nodeuser"
)

// This file is the host's TLS bootstrap, the kubelet's
// --bootstrap-kubeconfig: while the kubeconfig holds a usable certificate
// of the node, it is the node's; otherwise the bootstrap kubeconfig (a
// bootstrap token, user system:bootstrap:<id> in system:bootstrappers)
// requests one, and the kubeconfig is written anew to point at the
// certificate folder, where it will be.

// CurrentPath is the file in dir that holds the node's current key and
// certificate: a link to the newest nodelet-client-<time>.pem.
func CurrentPath(dir string) string {
	return filepath.Join(dir, CertificatePrefix+"-current.pem")
}

// CertificateUsable tells why the key and certificate of a kubeconfig
// cannot be the node's client credentials at now (nil: they can): missing,
// unparsable, not a pair, not valid yet, expired, or naming another user
// than the node's (a --node-name changed: the certificate manager would
// renew it as the other node, which no approver grants).
func CertificateUsable(certPEM, keyPEM []byte, nodeName string, now time.Time) error {
	if len(certPEM) == 0 {
		return errors.New("it holds no client certificate")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("its client certificate and key are not a usable pair: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Errorf("its client certificate cannot be parsed: %w", err)
	}
	switch {
	case now.Before(leaf.NotBefore):
		return fmt.Errorf("its client certificate is not valid before %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	case !now.Before(leaf.NotAfter):
		return fmt.Errorf("its client certificate expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	case leaf.Subject.CommonName != nodeuser.Name(nodeName):
		return fmt.Errorf("its client certificate is for %q, not %q", leaf.Subject.CommonName, nodeuser.Name(nodeName))
	}
	return nil
}

// HostCredentials are what a host's node identity starts from (Options'
// fields of the same names).
type HostCredentials struct {
	Server                               *rest.Config
	Bootstrap                            *rest.Config
	InitialCertificatePEM, InitialKeyPEM []byte
	// Bootstrapping tells that the kubeconfig was not usable, and why:
	// it has been written anew and the bootstrap credentials request the
	// node's first certificate. Empty when the kubeconfig is used.
	Bootstrapping string
}

// LoadHostCredentials reads the kubeconfig and, when it is not usable at
// now (missing, or see CertificateUsable), the bootstrap kubeconfig, and
// then writes the kubeconfig to point at CurrentPath(certDir) with the
// bootstrap kubeconfig's server and CA, as the kubelet does. A usable
// kubeconfig is left as it is; the bootstrap kubeconfig is then optional
// (kubeadm removes it once the node has joined).
func LoadHostCredentials(kubeconfigPath, bootstrapPath, certDir, nodeName string, now time.Time) (HostCredentials, error) {
	reason, config, err := usableKubeconfig(kubeconfigPath, nodeName, now)
	if err != nil {
		return HostCredentials{}, err
	}
	if reason == "" {
		creds := HostCredentials{Server: config, InitialCertificatePEM: certificateBlocks(config.CertData), InitialKeyPEM: config.KeyData}
		if _, err := os.Stat(bootstrapPath); err == nil {
			if creds.Bootstrap, err = loadKubeconfig(bootstrapPath); err != nil {
				return HostCredentials{}, fmt.Errorf("loading the bootstrap kubeconfig %s: %w", bootstrapPath, err)
			}
		}
		return creds, nil
	}
	bootstrap, err := loadKubeconfig(bootstrapPath)
	if err != nil {
		return HostCredentials{}, fmt.Errorf("kubeconfig %s is not usable (%s) and the bootstrap kubeconfig %s cannot be loaded: %w", kubeconfigPath, reason, bootstrapPath, err)
	}
	if err := writeNodeKubeconfig(kubeconfigPath, bootstrap, CurrentPath(certDir)); err != nil {
		return HostCredentials{}, err
	}
	return HostCredentials{Server: rest.AnonymousClientConfig(bootstrap), Bootstrap: bootstrap, Bootstrapping: reason}, nil
}

// usableKubeconfig loads the kubeconfig with its key and certificate
// read, and says why it is not usable ("" when it is).
func usableKubeconfig(path, nodeName string, now time.Time) (string, *rest.Config, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "it does not exist", nil, nil
	} else if err != nil {
		return "", nil, fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	config, err := loadKubeconfig(path)
	if err != nil {
		return fmt.Sprintf("it cannot be loaded: %v", err), nil, nil
	}
	// The key and certificate as data, as the node's client and the
	// certificate store take them.
	if err := rest.LoadTLSFiles(config); err != nil {
		return fmt.Sprintf("its client certificate or key cannot be read: %v", err), nil, nil
	}
	if err := CertificateUsable(config.CertData, config.KeyData, nodeName, now); err != nil {
		return err.Error(), nil, nil
	}
	return "", config, nil
}

// certificateBlocks is the CERTIFICATE blocks of PEM data: a file that
// holds the key too, as CurrentPath does, given as the certificate.
func certificateBlocks(data []byte) []byte {
	var certs []byte
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return certs
		}
		if block.Type == "CERTIFICATE" {
			certs = append(certs, pem.EncodeToMemory(block)...)
		}
	}
}

func loadKubeconfig(path string) (*rest.Config, error) {
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return config, nil
}

// writeNodeKubeconfig writes the node's kubeconfig: the bootstrap
// kubeconfig's server and CA, and the node's key and certificate file.
func writeNodeKubeconfig(path string, bootstrap *rest.Config, pemPath string) error {
	cluster := &clientcmdapi.Cluster{
		Server:                bootstrap.Host,
		TLSServerName:         bootstrap.ServerName,
		InsecureSkipTLSVerify: bootstrap.Insecure,
		CertificateAuthority:  bootstrap.CAFile,
	}
	if bootstrap.CAFile == "" {
		cluster.CertificateAuthorityData = bootstrap.CAData
	}
	config := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"default-cluster": cluster},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pemPath, ClientKey: pemPath}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the folder of kubeconfig %s: %w", path, err)
	}
	if err := clientcmd.WriteToFile(config, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}
