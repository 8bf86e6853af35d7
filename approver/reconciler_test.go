package approver

// The reconciler against a real kube-apiserver and etcd (envtest): which
// requests pass is Decide's table; this is that a CSR carries what Decide
// reads (the API server writes the requester's user info, with the node
// its token is bound to, into it) and that the decision reaches the API.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"testing"

	"github.com/go-logr/logr/testr"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/testenv"
)

func TestReconcilerApprovesTheCompanionOfTheTokensNodeOnly(t *testing.T) {
	config := testenv.StartAPIServer(t)
	ctx := t.Context()
	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// nodelet's ServiceAccount, which may create CSRs, and the node its
	// pod runs on.
	for _, object := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nodelet", Namespace: "default"}},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "nodelet"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "nodelet"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nodelet"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nodelet", Namespace: "default"}},
		},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}},
	} {
		if err := admin.Create(ctx, object); err != nil {
			t.Fatalf("creating %T %s: %v", object, object.GetName(), err)
		}
	}
	node := &corev1.Node{}
	if err := admin.Get(ctx, client.ObjectKey{Name: "worker-1"}, node); err != nil {
		t.Fatal(err)
	}
	adminset := kubernetes.NewForConfigOrDie(config)
	token, err := adminset.CoreV1().ServiceAccounts("default").CreateToken(ctx, "nodelet", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token bound to Node worker-1: %v", err)
	}
	serviceAccountConfig := rest.AnonymousClientConfig(config)
	serviceAccountConfig.BearerToken = token.Status.Token
	serviceAccount := kubernetes.NewForConfigOrDie(serviceAccountConfig)

	request := func(name, commonName string) {
		t.Helper()
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		_, err := serviceAccount.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    csrPEM(t, key, &x509.CertificateRequest{Subject: nodeSubject(commonName)}),
				SignerName: SignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating CSR %s as the ServiceAccount: %v", name, err)
		}
	}
	request("mine", "system:node:worker-1-nodelet")
	request("another-nodes", "system:node:worker-2-nodelet")

	reconciler := &Reconciler{
		Client: admin,
		Policy: Policy{Requester: "system:serviceaccount:default:nodelet", NodeNameSuffix: "-nodelet"},
		Log:    testr.New(t),
	}
	for name, want := range map[string]bool{"mine": true, "another-nodes": false} {
		if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			t.Fatalf("Reconcile(%s): %v", name, err)
		}
		csr := &certificatesv1.CertificateSigningRequest{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, csr); err != nil {
			t.Fatal(err)
		}
		approved := false
		for _, c := range csr.Status.Conditions {
			if c.Type == certificatesv1.CertificateApproved && c.Reason == ApprovedReason {
				approved = true
			}
		}
		if approved != want || (!want && len(csr.Status.Conditions) > 0) {
			t.Errorf("CSR %s (extra %v): conditions %v, want approved = %v and nothing else", name, csr.Spec.Extra, csr.Status.Conditions, want)
		}
	}
	// Judged again, an approved CSR is left as it is.
	if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: "mine"}}); err != nil {
		t.Errorf("Reconcile of an approved CSR: %v", err)
	}
}
