package e2e

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodelet/nodelet/internal/node/nodeuser"
)

// checkNodeClientCSR checks that the CSR asked the kubelet client signer
// for the node's client certificate with the kubelet's usages, and was
// approved by the controller-manager with the message and issued.
func checkNodeClientCSR(t *testing.T, csr *certificatesv1.CertificateSigningRequest, node, approval string) {
	t.Helper()
	wantUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if !slices.Equal(csr.Spec.Usages, wantUsages) {
		t.Errorf("CSR %s usages = %v, want %v (an ECDSA key)", csr.Name, csr.Spec.Usages, wantUsages)
	}
	var approvedBy string
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue {
			approvedBy = c.Reason + ": " + c.Message
		}
	}
	if approvedBy != "AutoApproved: "+approval {
		t.Errorf("CSR %s approval = %q, want AutoApproved: %s", csr.Name, approvedBy, approval)
	}
	cert := issuedCertificate(t, csr)
	if cert.Subject.CommonName != nodeuser.Name(node) || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("CSR %s issued a certificate for %s, want CN=%s,O=system:nodes", csr.Name, cert.Subject, nodeuser.Name(node))
	}
}

func issuedCertificate(t *testing.T, csr *certificatesv1.CertificateSigningRequest) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		t.Fatalf("CSR %s has no certificate issued", csr.Name)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("CSR %s: parsing its certificate: %v", csr.Name, err)
	}
	return cert
}

func leaseRenewedAfter(lease *coordinationv1.Lease, after time.Time) bool {
	return lease.Spec.RenewTime != nil && lease.Spec.RenewTime.After(after)
}

// whoAmI waits for the configuration to authenticate as the user, in the
// group.
func whoAmI(config *rest.Config, user, group string) func(context.Context) error {
	client := kubernetes.NewForConfigOrDie(config)
	return func(ctx context.Context) error {
		review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		info := review.Status.UserInfo
		if info.Username != user || !slices.Contains(info.Groups, group) {
			return fmt.Errorf("authenticated as %s in %v, want %s in %s", info.Username, info.Groups, user, group)
		}
		return nil
	}
}

// createBootstrapToken creates the bootstrap token Secret kubeadm makes
// (`kubeadm token create`), for authentication only, in the extra group,
// for an hour, and deletes it when the test ends.
func (f *Framework) createBootstrapToken(t *testing.T, id, secret, group string) {
	t.Helper()
	name := "bootstrap-token-" + id
	_, err := f.Client.CoreV1().Secrets(metav1.NamespaceSystem).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"token-id":                       id,
			"token-secret":                   secret,
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              group,
			"expiration":                     time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the bootstrap token Secret: %v", err)
	}
	t.Cleanup(func() {
		err := f.Client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting Secret kube-system/%s: %v", name, err)
		}
	})
}

// bindClusterRole binds the ClusterRole to the group until the test ends.
func (f *Framework) bindClusterRole(t *testing.T, name, role, group string) {
	t.Helper()
	_, err := f.Client.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("binding ClusterRole %s to %s: %v", role, group, err)
	}
	t.Cleanup(func() {
		err := f.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting ClusterRoleBinding %s: %v", name, err)
		}
	})
}

// writeTokenKubeconfig writes a kubeconfig for the stack's API server with
// the token, as the INSTALL document has one written for the bootstrap.
func (f *Framework) writeTokenKubeconfig(t *testing.T, path, token string) {
	t.Helper()
	err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"cluster": {Server: f.Env.APIServerURL, CertificateAuthority: f.Env.CAFile}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"tls-bootstrap-token-user": {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{"tls-bootstrap-token-user@cluster": {Cluster: "cluster", AuthInfo: "tls-bootstrap-token-user"}},
		CurrentContext: "tls-bootstrap-token-user@cluster",
	}, path)
	if err != nil {
		t.Fatal(err)
	}
}

// clientCSRsOf lists the CSRs of the kubelet client signer the user
// requested, oldest first.
func (f *Framework) clientCSRsOf(ctx context.Context, username string) ([]certificatesv1.CertificateSigningRequest, error) {
	list, err := f.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CSRs: %w", err)
	}
	var csrs []certificatesv1.CertificateSigningRequest
	for _, csr := range list.Items {
		if csr.Spec.Username == username && csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
			csrs = append(csrs, csr)
		}
	}
	slices.SortFunc(csrs, func(a, b certificatesv1.CertificateSigningRequest) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return csrs, nil
}

// deleteClientCSRsOf deletes the users' CSRs of the kubelet client
// signer (the node's serving certificate requests are other tests').
func (f *Framework) deleteClientCSRsOf(usernames ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := f.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, csr := range list.Items {
		if !slices.Contains(usernames, csr.Spec.Username) || csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
			continue
		}
		if err := f.Client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting CSR %s: %w", csr.Name, err)
		}
	}
	return nil
}

// randomString is n characters of [a-z0-9], as bootstrap token IDs and
// secrets are made of.
func randomString(t *testing.T, n int) string {
	t.Helper()
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b strings.Builder
	for range n {
		i, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteByte(alphabet[i.Int64()])
	}
	return b.String()
}
