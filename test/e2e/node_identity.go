package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/nodelet/nodelet/internal/node/nodeidentity"
)

// chartRendering is the Helm chart of this repository rendered for a
// release, as `helm install` would apply it.
type chartRendering struct {
	// objects are the rendered objects but the DaemonSet and the
	// Deployment, as YAML documents: what the test applies (the stack has
	// no kubelet to run the pods).
	objects []byte
	// approverArgs are the approver Deployment's container arguments.
	approverArgs []string
	// daemonSet is nodelet's DaemonSet, not applied.
	daemonSet *appsv1.DaemonSet
}

// renderChart renders charts/nodelet with the helm that
// hack/check-manifests.sh builds into .cache/bin (the e2e suite runs it
// before the tests).
func (f *Framework) renderChart(t *testing.T, release, namespace string) chartRendering {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// For the stack's API server: the chart's kubeVersion refuses helm
	// template's default.
	version, err := f.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(root, ".cache", "bin", "helm")
	out, err := exec.CommandContext(t.Context(), helm, "template", release, filepath.Join(root, "charts", "nodelet"),
		"--namespace", namespace, "--kube-version", version.GitVersion).Output()
	if err != nil {
		t.Fatalf("rendering the chart with %s (hack/check-manifests.sh builds it): %v", helm, err)
	}
	var rendering chartRendering
	for _, doc := range strings.Split(string(out), "\n---") {
		object := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &object.Object); err != nil {
			t.Fatalf("decoding the chart's rendering: %v\n%s", err, doc)
		}
		// Hooks run at other moments than an install (the post-delete one
		// at an uninstall).
		if _, hook := object.GetAnnotations()["helm.sh/hook"]; hook {
			continue
		}
		// The test plays the DaemonSet controller and the kubelet as the
		// administrator (a DaemonSet's pod it makes, tokens it asks
		// for), which this policy refuses (TestCompanionFences).
		if strings.HasSuffix(object.GetName(), "-release-identities") {
			continue
		}
		switch object.GetKind() {
		case "":
		case "DaemonSet":
			// nodelet's, not the runtime's beside it, whose pods have no
			// ServiceAccount token.
			if object.GetLabels()["app.kubernetes.io/component"] != "agent" {
				continue
			}
			rendering.daemonSet = &appsv1.DaemonSet{}
			if err := yaml.Unmarshal([]byte(doc), rendering.daemonSet); err != nil {
				t.Fatalf("decoding nodelet's DaemonSet: %v", err)
			}
		case "Deployment":
			deployment := &appsv1.Deployment{}
			if err := yaml.Unmarshal([]byte(doc), deployment); err != nil {
				t.Fatalf("decoding the approver's Deployment: %v", err)
			}
			rendering.approverArgs = deployment.Spec.Template.Spec.Containers[0].Args
		default:
			rendering.objects = append(rendering.objects, []byte("---\n"+strings.TrimSpace(doc)+"\n")...)
		}
	}
	if rendering.approverArgs == nil || rendering.daemonSet == nil {
		t.Fatal("the chart rendered no approver Deployment or no DaemonSet")
	}
	return rendering
}

// applyRendering applies the objects as the admin and deletes them when
// the test ends.
func (f *Framework) applyRendering(t *testing.T, objects []byte) {
	t.Helper()
	if _, stderr, err := f.kubectl(t.Context(), bytes.NewReader(objects), "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the chart's objects: %v\n%s", err, stderr)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, stderr, err := f.kubectl(ctx, bytes.NewReader(objects), "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
			t.Errorf("cleanup: deleting the chart's objects: %v\n%s", err, stderr)
		}
	})
}

// tokenConfig is a client configuration for the stack's API server with a
// token of the ServiceAccount, bound to the object when bound is not nil:
// the API server then names, in the token and in the user info of the
// requests made with it, the node (of a Node, or of a pod on one) and the
// pod (of a pod), as for a DaemonSet pod's projected token.
func (f *Framework) tokenConfig(t *testing.T, namespace, serviceAccount string, bound *authenticationv1.BoundObjectReference) *rest.Config {
	t.Helper()
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600), BoundObjectRef: bound}}
	token, err := f.Client.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), serviceAccount, request, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a token for ServiceAccount %s/%s: %v", namespace, serviceAccount, err)
	}
	return &rest.Config{
		Host:            f.Env.APIServerURL,
		TLSClientConfig: rest.TLSClientConfig{CAFile: f.Env.CAFile},
		BearerToken:     token.Status.Token,
		UserAgent:       "nodelet-e2e/" + serviceAccount,
	}
}

func boundToNode(node *corev1.Node) *authenticationv1.BoundObjectReference {
	return &authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID}
}

func boundToPod(pod *corev1.Pod) *authenticationv1.BoundObjectReference {
	return &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
}

// createDaemonSet creates a DaemonSet named as the chart's, with its
// selector and ServiceAccount, whose pods land only on nodes with the
// label and tolerate none of their taints. The chart's own would need a
// kubelet to run its pods and the scheduler to place them on Nodes that
// have no capacity (no agent reports it); on the test's tainted,
// agentless Nodes this one's controller makes no pod, and keeps the pods
// the test makes for it (createDaemonSetPod), as it keeps a running one
// on a node that became tainted NoSchedule. OnDelete: no rolling update
// replaces them.
func (f *Framework) createDaemonSet(t *testing.T, chart *appsv1.DaemonSet, nodeLabel map[string]string) *appsv1.DaemonSet {
	t.Helper()
	daemonSet := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: chart.Name, Namespace: chart.Namespace},
		Spec: appsv1.DaemonSetSpec{
			Selector:       chart.Spec.Selector,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: chart.Spec.Template.Labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: chart.Spec.Template.Spec.ServiceAccountName,
					NodeSelector:       nodeLabel,
					Containers:         []corev1.Container{{Name: "nodelet", Image: busyboxImage}},
				},
			},
		},
	}
	created, err := f.Client.AppsV1().DaemonSets(chart.Namespace).Create(t.Context(), daemonSet, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating DaemonSet %s/%s: %v", chart.Namespace, chart.Name, err)
	}
	return created
}

// createDaemonSetPod creates a pod of the DaemonSet's template on the
// node, controlled by the DaemonSet when owned (as its controller makes
// them), and otherwise an orphan its selector does not match (else the
// controller would adopt it). No agent runs it: it stays Pending, which a
// token bound to it does not mind. It tolerates every taint, as the
// controller's pods tolerate the node lifecycle's NoExecute ones.
func (f *Framework) createDaemonSetPod(t *testing.T, daemonSet *appsv1.DaemonSet, name, nodeName string, owned bool) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: daemonSet.Namespace},
		Spec:       *daemonSet.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = nodeName
	pod.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	if owned {
		pod.Labels = daemonSet.Spec.Template.Labels
		pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(daemonSet, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
	}
	created := f.createPod(t, pod)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := f.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting pod %s/%s: %v", pod.Namespace, name, err)
		}
	})
	return created
}

// startApprover builds nodelet-approver and runs it with the arguments
// the chart gives it and the given identity, until the test ends. Its
// log is returned.
func startApprover(t *testing.T, config *rest.Config, namespace string, args []string) *syncBuffer {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "nodelet-approver")
	build := goBuild(root, "-o", bin, "./cmd/nodelet-approver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nodelet-approver: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	err = clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"stack": {Server: config.Host, CertificateAuthority: config.CAFile}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"approver": {Token: config.BearerToken}},
		Contexts:       map[string]*clientcmdapi.Context{"stack": {Cluster: "stack", AuthInfo: "approver"}},
		CurrentContext: "stack",
	}, kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var flags []string
	for _, arg := range args {
		// Stacks and tests side by side must not share a port.
		if strings.HasPrefix(arg, "--health-probe-bind-address=") {
			arg = "--health-probe-bind-address=0"
		}
		flags = append(flags, arg)
	}
	log := &syncBuffer{}
	cmd := exec.Command(bin, append(flags, "--kubeconfig="+kubeconfig)...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+namespace)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting nodelet-approver: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		// Its exit status after SIGTERM tells nothing the log does not.
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("nodelet-approver log:\n%s", log.String())
		}
	})
	return log
}

// requestCertificate creates a CSR for the subject with the signer, as the
// client's user, with the usages and lifetime nodelet asks for; it
// returns its name.
func requestCertificate(ctx context.Context, client kubernetes.Interface, subject pkix.Name, signer string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		return "", err
	}
	csr, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-identity-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        signer,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](nodeidentity.CertificateLifetimeSeconds),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return csr.Name, nil
}

// approved tells whether a CSR has an Approved condition, and its reason.
func approved(csr *certificatesv1.CertificateSigningRequest) (bool, string) {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return true, c.Reason
		}
	}
	return false, ""
}

// forbidden fails unless err is the API server's 403 whose message holds
// want.
func forbidden(t *testing.T, what string, err error, want string) {
	t.Helper()
	var status interface{ Status() metav1.Status }
	switch {
	case err == nil:
		t.Errorf("%s: allowed, want 403 Forbidden", what)
	case !errors.As(err, &status) || status.Status().Code != 403:
		t.Errorf("%s: %v, want 403 Forbidden", what, err)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%s: %v, want a refusal saying %q", what, err, want)
	}
}

// deleteCSRsOf deletes, as the admin, the CSRs the user requested.
func (f *Framework) deleteCSRsOf(username string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	csrs, err := f.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, csr := range csrs.Items {
		if csr.Spec.Username != username {
			continue
		}
		if err := f.Client.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting CSR %s: %w", csr.Name, err)
		}
	}
	return nil
}
