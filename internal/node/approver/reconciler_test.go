package approver

// The reconciler against a real kube-apiserver and etcd (envtest): which
// requests pass is Decide's table; this is that a CSR carries what Decide
// reads (the API server writes the requester's user info, with the pod
// and node its token is bound to, into it), that the reconciler reads
// that pod, and that the decision reaches the API. envtest runs no
// controller-manager: the DaemonSet makes no pod, the test makes the pods
// it owns, as its controller would.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"net"
	"testing"

	"github.com/go-logr/logr/testr"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

func TestReconcilerApprovesTheDaemonSetPodsCompanionOnly(t *testing.T) {
	config := testenv.StartAPIServer(t)
	ctx := t.Context()
	admin := adminClient(t, config)
	create := func(object client.Object) {
		t.Helper()
		if err := admin.Create(ctx, object); err != nil {
			t.Fatalf("creating %T %s: %v", object, object.GetName(), err)
		}
	}
	// nodelet's ServiceAccount, which may create CSRs, its DaemonSet, and
	// the node its pod runs on.
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nodelet", Namespace: "default"}})
	create(&rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "nodelet"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create"}}},
	})
	create(&rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodelet"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nodelet"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "nodelet", Namespace: "default"}},
	})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}
	create(node)
	labels := map[string]string{"app": "nodelet"}
	daemonSet := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "nodelet", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{ServiceAccountName: "nodelet", Containers: []corev1.Container{{Name: "nodelet", Image: "nodelet"}}},
			},
		},
	}
	create(daemonSet)
	pod := func(name string, owned bool) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec:       *daemonSet.Spec.Template.Spec.DeepCopy(),
		}
		p.Spec.NodeName = node.Name
		if owned {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(daemonSet, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
		}
		create(p)
		return p
	}
	ofTheDaemonSet, gone, stray := pod("nodelet-abcde", true), pod("nodelet-gone", true), pod("stray", false)
	// A pod whose creator wrote a controller reference naming the
	// DaemonSet, but not its UID (it cannot know it without reading it).
	forged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: "default", Labels: labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "DaemonSet", Name: daemonSet.Name, UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true),
		}}},
		Spec: *daemonSet.Spec.Template.Spec.DeepCopy(),
	}
	forged.Spec.NodeName = node.Name
	create(forged)

	adminset := kubernetes.NewForConfigOrDie(config)
	// as is a client of the ServiceAccount with a token bound to the
	// object.
	as := func(kind, name string, uid types.UID) kubernetes.Interface {
		t.Helper()
		token, err := adminset.CoreV1().ServiceAccounts("default").CreateToken(ctx, "nodelet", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{
				Kind: kind, APIVersion: "v1", Name: name, UID: uid,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a token bound to %s %s: %v", kind, name, err)
		}
		serviceAccountConfig := rest.AnonymousClientConfig(config)
		serviceAccountConfig.BearerToken = token.Status.Token
		return kubernetes.NewForConfigOrDie(serviceAccountConfig)
	}
	request := func(as kubernetes.Interface, name, commonName string, expirationSeconds *int32) {
		t.Helper()
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		_, err := as.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:           csrPEM(t, key, &x509.CertificateRequest{Subject: nodeSubject(commonName)}),
				SignerName:        SignerName,
				Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
				ExpirationSeconds: expirationSeconds,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating CSR %s as the ServiceAccount: %v", name, err)
		}
	}
	const companion = "system:node:worker-1-nodelet"
	day := ptr.To[int32](86400)
	podToken := as("Pod", ofTheDaemonSet.Name, ofTheDaemonSet.UID)
	request(podToken, "mine", companion, day)
	request(podToken, "another-nodes", "system:node:worker-2-nodelet", day)
	request(podToken, "no-lifetime", companion, nil)
	request(as("Node", node.Name, node.UID), "node-token", companion, day)
	request(as("Pod", stray.Name, stray.UID), "stray-pod", companion, day)
	request(as("Pod", gone.Name, gone.UID), "pod-gone", companion, day)
	request(as("Pod", forged.Name, forged.UID), "forged-owner", companion, day)
	if err := admin.Delete(ctx, gone, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}

	reconciler := &Reconciler{
		Client:    admin,
		APIReader: admin,
		Policy: Policy{
			Requester:          "system:serviceaccount:default:nodelet",
			NodeNameSuffix:     "-nodelet",
			DaemonSetNamespace: "default", DaemonSetName: "nodelet",
			MaxExpirationSeconds: 86400,
		},
		Log: testr.New(t),
	}
	for name, want := range map[string]bool{
		"mine": true, "another-nodes": false, "no-lifetime": false, "node-token": false, "stray-pod": false, "pod-gone": false, "forged-owner": false,
	} {
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
		if name == "mine" {
			// What Decide reads of a pod-bound token.
			for key, want := range map[string]string{PodNameExtra: ofTheDaemonSet.Name, PodUIDExtra: string(ofTheDaemonSet.UID), NodeNameExtra: node.Name} {
				if got := csr.Spec.Extra[key]; len(got) != 1 || got[0] != want {
					t.Errorf("CSR %s: extra %s = %q, want [%q]", name, key, got, want)
				}
			}
		}
	}
	// Judged again, an approved CSR is left as it is.
	if _, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: "mine"}}); err != nil {
		t.Errorf("Reconcile of an approved CSR: %v", err)
	}
}

// approvedByUs tells whether the approver approved the CSR, and whether it
// has any condition at all.
func approvedByUs(csr *certificatesv1.CertificateSigningRequest) (approved, anyCondition bool) {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved && c.Reason == ApprovedReason {
			approved = true
		}
	}
	return approved, len(csr.Status.Conditions) > 0
}

func TestReconcilerApprovesTheCompanionsServingCertificateOnly(t *testing.T) {
	config := testenv.StartAPIServer(t)
	ctx := t.Context()
	admin := adminClient(t, config)
	// envtest authorises with RBAC alone: the rights the Node authorizer
	// gives nodes over their CSRs, given to system:nodes.
	if err := admin.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "nodes-csrs"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get"}}},
	}); err != nil {
		t.Fatal(err)
	}
	if err := admin.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "nodes-csrs"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "nodes-csrs"},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:nodes"}},
	}); err != nil {
		t.Fatal(err)
	}
	node := companionNode()
	node.Name = "serving-1-nodelet"
	status := node.Status
	if err := admin.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status = status
	if err := admin.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	// as is a client of a user in system:nodes (impersonated by the
	// test's admin): the API server writes that user into the CSR.
	as := func(user string) kubernetes.Interface {
		impersonating := rest.CopyConfig(config)
		impersonating.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:nodes"}}
		return kubernetes.NewForConfigOrDie(impersonating)
	}
	request := func(as kubernetes.Interface, name, commonName string, ips ...string) {
		t.Helper()
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		template := &x509.CertificateRequest{Subject: nodeSubject(commonName), DNSNames: []string{"serving-1-nodelet"}}
		for _, ip := range ips {
			template.IPAddresses = append(template.IPAddresses, net.ParseIP(ip))
		}
		_, err := as.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:           csrPEM(t, key, template),
				SignerName:        ServingSignerName,
				Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
				ExpirationSeconds: ptr.To[int32](86400),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating CSR %s: %v", name, err)
		}
	}
	const companion = "system:node:serving-1-nodelet"
	request(as(companion), "serving-mine", companion, "10.0.0.7")
	request(as(companion), "serving-another-ip", companion, "10.0.0.7", "192.0.2.1")
	request(as("system:node:serving-1"), "serving-kubelets-node", "system:node:serving-1", "10.0.0.7")
	request(as("system:node:absent-nodelet"), "serving-no-node", "system:node:absent-nodelet", "10.0.0.7")

	reconciler := &Reconciler{Client: admin, APIReader: admin, Policy: policy, Log: testr.New(t)}
	wantRequeue := map[string]bool{"serving-another-ip": true, "serving-no-node": true}
	check := func(name string, want bool) {
		t.Helper()
		result, err := reconciler.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: name}})
		if err != nil {
			t.Fatalf("Reconcile(%s): %v", name, err)
		}
		// Those the Node may yet allow are judged again.
		if requeue := result.RequeueAfter > 0; reconciler.Serving != nil && requeue != wantRequeue[name] {
			t.Errorf("Reconcile(%s) requeues after %s, want a requeue %v", name, result.RequeueAfter, wantRequeue[name])
		}
		csr := &certificatesv1.CertificateSigningRequest{}
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, csr); err != nil {
			t.Fatal(err)
		}
		if approved, any := approvedByUs(csr); approved != want || (!want && any) {
			t.Errorf("CSR %s (requester %s): conditions %v, want approved = %v and nothing else", name, csr.Spec.Username, csr.Status.Conditions, want)
		}
	}
	// Without a serving policy, serving CSRs are none of its business.
	check("serving-mine", false)

	reconciler.Serving = &servingPolicy
	for name, want := range map[string]bool{
		"serving-mine": true, "serving-another-ip": false, "serving-kubelets-node": false, "serving-no-node": false,
	} {
		check(name, want)
	}
}

// adminClient is a client of the API server with the built-in types.
func adminClient(t *testing.T, config *rest.Config) client.Client {
	t.Helper()
	scheme := apiruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return admin
}
