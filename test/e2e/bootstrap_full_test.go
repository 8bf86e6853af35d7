//go:build full

package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodelet/nodelet/internal/node/nodeidentity"
	"github.com/nodelet/nodelet/internal/node/nodeuser"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestBootstrapTokenGivesTheNodeItsCertificate is the host install's TLS
// bootstrap on the real stack, as its INSTALL document has an
// administrator do it: a bootstrap token Secret in kube-system and the
// ClusterRoleBindings kubeadm makes (the token's group may create node
// CSRs and have them approved; nodes may renew their own), then nodelet
// restarted with a --kubeconfig that does not exist and
// --bootstrap-kubeconfig. The controller-manager's csrapproving
// controller approves the request and its signer signs it (for two
// minutes on the e2e stacks): nodelet writes the kubeconfig, speaks as
// system:node:<node> (its Lease renewed after the restart: the token
// cannot write it), is confined by the Node authorizer, and renews the
// certificate with the certificate itself before it expires.
//
// It restarts nodelet with other flags: it must run alone (no
// t.Parallel; see main_test.go).
func TestBootstrapTokenGivesTheNodeItsCertificate(t *testing.T) {
	ctx := t.Context()
	ns := f.NewNamespace(t)
	node := f.Env.NodeName
	tokenID, tokenSecret := randomString(t, 6), randomString(t, 16)
	bootstrapUser := "system:bootstrap:" + tokenID
	group := "system:bootstrappers:nodelet-e2e-" + tokenID
	t.Cleanup(func() {
		if err := f.deleteClientCSRsOf(bootstrapUser, nodeuser.Name(node)); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	f.createBootstrapToken(t, tokenID, tokenSecret, group)
	f.bindClusterRole(t, "nodelet-e2e-bootstrap-"+tokenID, "system:node-bootstrapper", group)
	f.bindClusterRole(t, "nodelet-e2e-autoapprove-"+tokenID, "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group)
	f.bindClusterRole(t, "nodelet-e2e-renew-"+tokenID, "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes")

	dir := t.TempDir()
	bootstrapKubeconfig, kubeconfig, certDir := filepath.Join(dir, "bootstrap-kubeconfig"), filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "pki")
	f.writeTokenKubeconfig(t, bootstrapKubeconfig, tokenID+"."+tokenSecret)
	// The API server reads bootstrap tokens from an informer: the token
	// authenticates a moment after its Secret is made.
	bootstrapConfig, err := clientcmd.BuildConfigFromFlags("", bootstrapKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "the bootstrap token to authenticate as "+bootstrapUser, whoAmI(bootstrapConfig, bootstrapUser, "system:bootstrappers"))

	restartedAt := time.Now()
	f.restartNodeletWith(t, "--kubeconfig="+kubeconfig, "--bootstrap-kubeconfig="+bootstrapKubeconfig, "--cert-dir="+certDir)

	// One request, made with the token, approved by the controller-manager
	// for the nodeclient binding, and issued for the node.
	csrs, err := f.clientCSRsOf(ctx, bootstrapUser)
	if err != nil {
		t.Fatal(err)
	}
	if len(csrs) != 1 {
		t.Fatalf("the bootstrap token made %d node client CSRs, want 1", len(csrs))
	}
	first := csrs[0]
	checkNodeClientCSR(t, &first, node, "Auto approving kubelet client certificate after SubjectAccessReview.")
	if !slices.Contains(first.Spec.Groups, group) {
		t.Errorf("CSR %s was requested by groups %v, want the token's %s", first.Name, first.Spec.Groups, group)
	}

	// The kubeconfig nodelet wrote is the node's.
	nodeConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("loading the kubeconfig nodelet wrote: %v", err)
	}
	if want := nodeidentity.CurrentPath(certDir); nodeConfig.CertFile != want || nodeConfig.BearerToken != "" {
		t.Errorf("the kubeconfig nodelet wrote has certificate %q and token %q, want %s alone", nodeConfig.CertFile, nodeConfig.BearerToken, want)
	}
	await.Eventually(t, 10*time.Second, "the written kubeconfig to authenticate as the node", whoAmI(nodeConfig, nodeuser.Name(node), "system:nodes"))

	// nodelet speaks with it: the Lease is renewed after the restart,
	// which the bootstrap token may not do.
	await.Eventually(t, time.Minute, "the node's Lease to be renewed after the restart", await.Condition(func(ctx context.Context) (bool, error) {
		lease, err := f.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return leaseRenewedAfter(lease, restartedAt), nil
	}))

	// Confined as a kubelet: a Secret none of its pods uses is refused.
	createSecret(t, ns, "not-for-the-node")
	nodeClient := kubernetes.NewForConfigOrDie(nodeConfig)
	_, err = nodeClient.CoreV1().Secrets(ns).Get(ctx, "not-for-the-node", metav1.GetOptions{})
	forbidden(t, "the node reading a Secret its pods do not use", err, "no relationship found between node '"+node+"' and this object")
	_, err = kubernetes.NewForConfigOrDie(bootstrapConfig).CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	forbidden(t, "the bootstrap token reading the Node", err, bootstrapUser)

	// Renewed before it expires, with the node's certificate (the
	// signer's two minutes, backdated five, put the renewal within 80 s
	// of the first's issuance), approved for the selfnodeclient binding.
	var renewal certificatesv1.CertificateSigningRequest
	await.Eventually(t, 3*time.Minute, "a renewal requested by "+nodeuser.Name(node)+" to be issued", await.Condition(func(ctx context.Context) (bool, error) {
		csrs, err := f.clientCSRsOf(ctx, nodeuser.Name(node))
		for _, csr := range csrs {
			if csr.CreationTimestamp.After(restartedAt.Add(-time.Second)) && len(csr.Status.Certificate) > 0 {
				renewal = csr
				return true, nil
			}
		}
		return false, err
	}))
	checkNodeClientCSR(t, &renewal, node, "Auto approving self kubelet client certificate after SubjectAccessReview.")
	renewed := issuedCertificate(t, &renewal)
	await.Eventually(t, 30*time.Second, "the renewed certificate to be the node's current one", await.Condition(func(context.Context) (bool, error) {
		data, err := os.ReadFile(nodeidentity.CurrentPath(certDir))
		if err != nil {
			return false, err
		}
		block, _ := pem.Decode(data)
		current, err := x509.ParseCertificate(block.Bytes)
		return err == nil && current.SerialNumber.Cmp(renewed.SerialNumber) == 0, err
	}))
	// Its connections made with the first are closed (looked at every
	// 10 s), so that it shows the renewed one from then on.
	await.Eventually(t, 30*time.Second, "nodelet to close the connections made with the first certificate", await.Condition(func(context.Context) (bool, error) {
		return f.Nodelet.LogLines("Using the renewed node client certificate", 1) != "", nil
	}))
}
