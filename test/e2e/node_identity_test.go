package e2e

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/node/approver"
	"github.com/nodelet/nodelet/internal/node/nodeidentity"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestNodeIdentityOfTheDaemonSet does what a DaemonSet pod of the chart
// does to get its node's identity, without a host kubelet to run the pod
// (the stack has none): the chart's ServiceAccount, RBAC and admission
// policy are applied from its rendering, its approver runs as a process
// with its own ServiceAccount's token and the chart's arguments, a Node
// stands for the host, a DaemonSet named as the chart's owns a pod on it
// that never runs, and the bootstrap (package nodeidentity, as nodelet
// --node-identity=csr runs it) uses a token of the ServiceAccount bound to
// that pod, as the pod's projected token is. Tokens bound to the Node
// only, to a pod on another node and to a pod the DaemonSet does not own
// get no certificate. The stack's controller-manager signs approved CSRs
// for two minutes, so the certificate is renewed during the test.
func TestNodeIdentityOfTheDaemonSet(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := f.NewNamespace(t)
	suffix := ns[len(ns)-5:]
	release := "id-" + suffix
	// The chart's names: the release name plus the chart's.
	agentSA, approverSA := release+"-nodelet", release+"-nodelet-approver"
	agentUser := "system:serviceaccount:" + ns + ":" + agentSA
	t.Cleanup(func() {
		if err := f.deleteCSRsOf(agentUser); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})

	rendering := f.renderChart(t, release, ns)
	f.applyRendering(t, rendering.objects)

	// The host and another node, where the DaemonSet's pods may be.
	nodeLabel := map[string]string{"nodelet.dev/e2e-identity": suffix}
	host := createNode(t, "e2e-identity-host-"+suffix, nodeLabel)
	other := createNode(t, "e2e-identity-other-"+suffix, nodeLabel)
	companion := host.Name + "-nodelet"
	t.Cleanup(func() { deleteNode(t, companion) })
	daemonSet := f.createDaemonSet(t, rendering.daemonSet, nodeLabel)
	agentPod := f.createDaemonSetPod(t, daemonSet, daemonSet.Name+"-host", host.Name, true)
	agentConfig := f.tokenConfig(t, ns, agentSA, boundToPod(agentPod))
	agent := kubernetes.NewForConfigOrDie(agentConfig)
	approverLog := startApprover(t, f.tokenConfig(t, ns, approverSA, nil), ns, rendering.approverArgs)

	// The admission policy: a CSR of another signer, which RBAC lets the
	// ServiceAccount create, is refused once the API server has loaded
	// the policy.
	const policySays = "may only create CertificateSigningRequests for the kubernetes.io/kube-apiserver-client-kubelet signer"
	err := await.Poll(ctx, time.Minute, func(ctx context.Context) error {
		name, err := requestCertificate(ctx, agent, pkix.Name{CommonName: "e2e-policy-probe"}, certificatesv1.KubeAPIServerClientSignerName)
		if err == nil {
			return fmt.Errorf("CSR %s of signer %s created: the policy is not in force yet", name, certificatesv1.KubeAPIServerClientSignerName)
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), policySays) {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("waiting for the admission policy to refuse a CSR of another signer: %v", err)
	}

	// The bootstrap, with the policy in force: nodelet's own CSR passes.
	identityLog := &syncBuffer{}
	identity, err := nodeidentity.Start(ctx, nodeidentity.Options{
		NodeName:  companion,
		Dir:       t.TempDir(),
		Bootstrap: agentConfig,
		Log:       funcr.New(func(prefix, args string) { fmt.Fprintln(identityLog, prefix, args) }, funcr.Options{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := identity.Wait(waitCtx); err != nil {
		t.Fatalf("%v\nbootstrap log:\n%s\napprover log:\n%s", err, identityLog.String(), approverLog.String())
	}
	first := identity.Current().Leaf
	checkNodeCertificate(t, first, companion)
	checkApprovedByTheApprover(t, agentUser, 1)

	nodeConfig, err := identity.RESTConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := kubernetes.NewForConfigOrDie(nodeConfig)
	t.Run("as the node", func(t *testing.T) { checkConfinedAsNode(t, node, ns, host, companion) })
	t.Run("as the ServiceAccount", func(t *testing.T) { checkConfinedAsServiceAccount(t, agent, ns, agentSA, host, policySays) })

	// Requests for the host's companion the approver must leave pending,
	// each for its reason.
	pendingCSRs := requestWithTokensProvingNoPodOnTheHost(t, ns, agentSA, companion, host, other, daemonSet)
	for csr, reason := range pendingCSRs {
		await.Eventually(t, time.Minute, "the approver to leave CSR "+csr+" pending", func(context.Context) error {
			for _, line := range strings.Split(approverLog.String(), "\n") {
				if strings.Contains(line, "Left the certificate signing request pending") && strings.Contains(line, csr) && strings.Contains(line, reason) {
					return nil
				}
			}
			return fmt.Errorf("no log line leaving %s pending because %q", csr, reason)
		})
	}

	// Renewal at 70 to 90% of the certificate's life, before it expires.
	// The stack's controller-manager signs for two minutes from now but
	// backdates the start by five (as for every short-lived certificate),
	// so that is from now to 80s in.
	await.Eventually(t, 3*time.Minute, "the node client certificate to be renewed", func(context.Context) error {
		if current := identity.Current(); current == nil || current.Leaf.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return fmt.Errorf("still the first certificate (serial %s, expiring at %s)", first.SerialNumber, first.NotAfter)
		}
		return nil
	})
	if now := time.Now(); now.After(first.NotAfter) {
		t.Errorf("the certificate was renewed at %s, after the first expired at %s", now, first.NotAfter)
	}
	renewed := identity.Current().Leaf
	checkNodeCertificate(t, renewed, companion)
	checkApprovedByTheApprover(t, agentUser, 2)
	// The client carries on with the renewed certificate.
	await.Eventually(t, time.Minute, "the node to read its Node with the renewed certificate", func(ctx context.Context) error {
		_, err := node.CoreV1().Nodes().Get(ctx, companion, metav1.GetOptions{})
		return err
	})
	await.Eventually(t, time.Minute, "the client to close the connections made with the first certificate", func(context.Context) error {
		if !strings.Contains(identityLog.String(), "closing the connections made with the previous one") {
			return fmt.Errorf("no such line in the bootstrap's log:\n%s", identityLog.String())
		}
		return nil
	})

	// Still pending, minutes after: neither the approver nor the
	// controller-manager's approver approved them.
	for name := range pendingCSRs {
		csr, err := f.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ok, reason := approved(csr); ok || len(csr.Status.Certificate) > 0 {
			t.Errorf("CSR %s (%s, extra %v) was approved (%s) or issued; it must stay pending", name, csr.Spec.Username, csr.Spec.Extra, reason)
		}
	}
}

// requestWithTokensProvingNoPodOnTheHost requests the host's companion's
// certificate, as nodelet does, with tokens of nodelet's ServiceAccount
// bound to: the host Node alone, nothing, a pod of the DaemonSet on the
// other node, and a pod on the host that the DaemonSet does not own. It
// returns each CSR's name and the reason the approver must give for
// leaving it pending.
func requestWithTokensProvingNoPodOnTheHost(t *testing.T, ns, agentSA, companion string, host, other *corev1.Node, daemonSet *appsv1.DaemonSet) map[string]string {
	onOther := f.createDaemonSetPod(t, daemonSet, daemonSet.Name+"-other", other.Name, true)
	stray := f.createDaemonSetPod(t, daemonSet, "not-of-the-daemonset", host.Name, false)
	reasons := map[*authenticationv1.BoundObjectReference]string{
		boundToNode(host):   "not bound to a pod",
		nil:                 "not bound to a pod",
		boundToPod(onOther): "not exactly CN=system:node:" + other.Name + "-nodelet,O=system:nodes (the requester's pod runs on node " + other.Name + ")",
		boundToPod(stray):   "pod " + ns + "/" + stray.Name + " is not controlled by DaemonSet " + ns + "/" + daemonSet.Name,
	}
	csrs := map[string]string{}
	for bound, reason := range reasons {
		client := kubernetes.NewForConfigOrDie(f.tokenConfig(t, ns, agentSA, bound))
		name, err := requestCertificate(t.Context(), client, pkix.Name{CommonName: "system:node:" + companion, Organization: []string{"system:nodes"}}, approver.SignerName)
		if err != nil {
			t.Fatalf("creating a CSR for %s with a token bound to %v: %v", companion, bound, err)
		}
		csrs[name] = reason
	}
	return csrs
}

// checkNodeCertificate: exactly the companion node's client identity,
// signed by the stack's CA.
func checkNodeCertificate(t *testing.T, cert *x509.Certificate, companion string) {
	t.Helper()
	if cert.Subject.CommonName != "system:node:"+companion || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("certificate subject = %s, want CN=system:node:%s,O=system:nodes", cert.Subject, companion)
	}
	caPEM, err := os.ReadFile(f.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate is not a client certificate of the stack's CA: %v", err)
	}
}

// checkApprovedByTheApprover: the ServiceAccount's CSRs of the kubelet
// client signer, at least want of them, were approved by nodelet-approver
// (not by the controller-manager's approver, whose checks they do not
// pass).
func checkApprovedByTheApprover(t *testing.T, username string, want int) {
	t.Helper()
	csrs, err := f.Client.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range csrs.Items {
		csr := &csrs.Items[i]
		if csr.Spec.Username != username || csr.Spec.SignerName != approver.SignerName {
			continue
		}
		if ok, reason := approved(csr); ok {
			if reason != approver.ApprovedReason {
				t.Errorf("CSR %s was approved with reason %q, want %q (nodelet-approver's)", csr.Name, reason, approver.ApprovedReason)
			}
			got = append(got, csr.Name)
		}
	}
	// At least: with the stack's short-lived certificates, a renewal may
	// already have been requested again.
	if len(got) < want {
		t.Errorf("approved CSRs of %s: %v, want at least %d", username, got, want)
	}
}

// checkConfinedAsNode: with its certificate, nodelet is its node, and the
// Node authorizer and NodeRestriction confine it.
func checkConfinedAsNode(t *testing.T, node kubernetes.Interface, ns string, host *corev1.Node, companion string) {
	ctx := t.Context()
	// Its own Node, as a kubelet registers it.
	if _, err := node.CoreV1().Nodes().Create(ctx, agentlessNode(companion), metav1.CreateOptions{}); err != nil {
		t.Errorf("registering its own Node %s: %v", companion, err)
	}
	// A Secret its pod uses, it reads (once the Node authorizer has seen
	// the pod); one no pod of its uses, it may not.
	used := createSecret(t, ns, "used-by-its-pod")
	createPodOnNode(t, ns, "on-the-companion", companion, corev1.Volume{
		Name:         "secret",
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: used.Name}},
	})
	await.Eventually(t, time.Minute, "the node to read the Secret its pod uses", func(ctx context.Context) error {
		_, err := node.CoreV1().Secrets(ns).Get(ctx, used.Name, metav1.GetOptions{})
		return err
	})
	secret := createSecret(t, ns, "not-used-by-its-pods")
	_, err := node.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
	forbidden(t, "reading a Secret no pod of the node uses", err, "forbidden")

	pod := createPodOnNode(t, ns, "on-the-host", host.Name)
	_, err = node.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType,
		[]byte(`{"status":{"message":"patched by another node"}}`), metav1.PatchOptions{}, "status")
	forbidden(t, "patching the status of another node's pod", err, "forbidden")

	_, err = node.CoreV1().Nodes().Patch(ctx, host.Name, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"e2e-patched":"by-another-node"}}}`), metav1.PatchOptions{})
	forbidden(t, "patching another Node", err, "forbidden")

	_, err = node.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	forbidden(t, "creating a token for a ServiceAccount its pods do not use", err, "forbidden")
}

// checkConfinedAsServiceAccount: the ServiceAccount may create and read
// its CSRs, nothing else; and the admission policy refuses its writes
// even where RBAC would allow them.
func checkConfinedAsServiceAccount(t *testing.T, agent kubernetes.Interface, ns, serviceAccount string, host *corev1.Node, policySays string) {
	ctx := t.Context()
	csrs, err := agent.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing CSRs as the ServiceAccount: %v", err)
	} else if len(csrs.Items) == 0 {
		t.Error("the ServiceAccount lists no CSR, not even its own")
	}
	secret := createSecret(t, ns, "not-for-the-service-account")
	_, err = agent.CoreV1().Secrets(ns).Get(ctx, secret.Name, metav1.GetOptions{})
	forbidden(t, "reading a Secret", err, "forbidden")
	_, err = agent.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	forbidden(t, "listing pods", err, "forbidden")
	_, err = agent.CoreV1().Nodes().Patch(ctx, host.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"e2e":"x"}}}`), metav1.PatchOptions{})
	forbidden(t, "patching a Node", err, "forbidden")
	_, err = agent.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	forbidden(t, "creating a token", err, "forbidden")

	// Given a right by mistake, the ServiceAccount is still refused by
	// the admission policy.
	_, err = f.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "by-mistake"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "by-mistake"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "by-mistake"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: serviceAccount, Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// RBAC refuses until it has seen the binding, then the policy does.
	await.Eventually(t, time.Minute, "the admission policy to refuse a ConfigMap RBAC allows", func(ctx context.Context) error {
		_, err := agent.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "by-mistake-"}}, metav1.CreateOptions{})
		if err == nil {
			return fmt.Errorf("the ServiceAccount created a ConfigMap")
		}
		if !strings.Contains(err.Error(), policySays) {
			return err
		}
		return nil
	})
}

// agentlessNode is a Node no agent runs: tainted so that the other
// tests' pods are never scheduled there (DaemonSet pods tolerating
// everything still are, and stay Pending until the Node is deleted).
func agentlessNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.NodeSpec{
			Unschedulable: true,
			Taints:        []corev1.Taint{{Key: "nodelet.dev/e2e-no-agent", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

func createNode(t *testing.T, name string, labels map[string]string) *corev1.Node {
	t.Helper()
	node := agentlessNode(name)
	node.Labels = labels
	node, err := f.Client.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	t.Cleanup(func() { deleteNode(t, name) })
	return node
}

func deleteNode(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleanup: deleting Node %s: %v", name, err)
	}
}

func createSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	secret, err := f.Client.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		StringData: map[string]string{"key": "value"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Secret %s/%s: %v", ns, name, err)
	}
	return secret
}

// createPodOnNode creates a pod bound to a node no agent runs: it stays
// Pending, and is removed at once when the test ends (nothing would
// finish a graceful deletion).
func createPodOnNode(t *testing.T, ns, name, nodeName string, volumes ...corev1.Volume) *corev1.Pod {
	t.Helper()
	pod := f.createPod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "c", Image: busyboxImage}},
			Volumes:    volumes,
		},
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := f.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting pod %s/%s: %v", ns, name, err)
		}
	})
	return pod
}
