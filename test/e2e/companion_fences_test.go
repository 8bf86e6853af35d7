package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The chart's admission policies' messages (templates/companion-fences.yaml).
const (
	companionPolicySays = "nodelet's companion "
	tokenPolicySays     = "only a host's kubelet may request a token of the ServiceAccount"
	ownerPolicySays     = "only the DaemonSet controller may create pods of nodelet's DaemonSets"
	hostPolicySays      = "only the DaemonSet controller (for nodelet's DaemonSets) and the chart's hook may create pods that reach their host"
	secretPolicySays    = "no legacy token Secret may be made"
)

// dryRun is a write the API server admits (authorization, admission
// plugins and policies) and stores nothing of: an escape that got through
// changes nothing.
var (
	dryRunCreate = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	dryRunPatch  = metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	dryRunDelete = metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}
)

// TestCompanionFences installs the chart (its DaemonSets on no node: the
// fences are admission policies, which need no pod) and tries, with real
// requests to the API server, each way out of them, and sees it refused:
//
//   - a companion's identity, system:node:<host>-nodelet in system:nodes,
//     writing another Node, another node's Lease or CSINode, the status of
//     a pod not bound to it, deleting such a pod, creating a pod that is
//     not a mirror pod, changing its own Node's taints or a label
//     NodeRestriction keeps from nodes, requesting a token bound to no pod;
//     while its own Node, Lease, CSINode and pods' status it may write;
//   - the same name outside system:nodes, given a node's rights (and the
//     creation of ConfigMaps) by RBAC: the Node authorizer does not know
//     it; its ConfigMap, which NodeRestriction does not judge either, the
//     chart's policy alone refuses, with or without NodeRestriction;
//   - a token for nodelet's ServiceAccount requested by the administrator,
//     by a user whose role allows it, and by a kubelet for no pod;
//   - by a user whose role lets them create pods in the release's
//     namespace: a pod with a forged controller reference to nodelet's
//     DaemonSet (its UID included) that runs as nodelet's ServiceAccount,
//     the same as the default ServiceAccount, a privileged pod with the
//     host's root, a legacy token Secret for nodelet's ServiceAccount;
//     while a plain pod is let in.
//
// The requests are made as those users through impersonation by the
// stack's administrator: the API server authorizes and admits each as the
// impersonated user. The gate's stack runs NodeRestriction, which refuses
// a node's escapes before the policies see them; the full tier's does not
// (hack/test.sh), and there every refusal must be the chart's policy's.
func TestCompanionFences(t *testing.T) {
	host := loadHostEnv(t)
	ctx := t.Context()
	ns := f.NewNamespace(t)
	suffix := ns[len(ns)-5:]
	release := installFenced(t, host, "fences", ns, nil)
	agentSA := release + "-nodelet"

	own := "e2e-fences-" + suffix + "-nodelet"
	other := createNode(t, "e2e-fences-other-"+suffix, nil)
	t.Cleanup(func() { deleteNode(t, own) })
	otherLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: other.Name, Namespace: corev1.NamespaceNodeLease}}
	if _, err := f.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, otherLease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})
	if _, err := f.Client.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: other.Name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.StorageV1().CSINodes().Delete(context.Background(), other.Name, metav1.DeleteOptions{})
	})
	elsewhere := createPodOnNode(t, ns, "elsewhere", other.Name)
	onOwn := createPodOnNode(t, ns, "on-the-companion", own)

	asNode := f.impersonating(t, "system:node:"+own, "system:nodes")
	asNamed := f.impersonating(t, "system:node:"+own)
	grantNodeRights(t, "e2e-fences-"+suffix, "system:node:"+own)
	// The policies are in force once the API server has loaded them. A
	// ConfigMap no node writes, which RBAC lets the name write and
	// NodeRestriction does not judge: the policy alone refuses it.
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "by-a-companion", Namespace: ns}}
	await.Eventually(t, time.Minute, "the chart's policies to be in force", func(ctx context.Context) error {
		_, err := asNamed.CoreV1().ConfigMaps(ns).Create(ctx, configMap, dryRunCreate)
		if err := refusedSaying(err, companionPolicySays); err != nil {
			return fmt.Errorf("a ConfigMap by a companion's name: %w", err)
		}
		_, err = f.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, agentSA, &authenticationTokenRequest, metav1.CreateOptions{})
		if err := refusedSaying(err, tokenPolicySays); err != nil {
			return fmt.Errorf("a token of %s for the administrator: %w", agentSA, err)
		}
		return nil
	})

	// Its own Node, registered as nodelet registers it (the companion
	// taint), which the escapes below then try to change.
	registered := agentlessNode(own)
	registered.Labels = map[string]string{"nodelet.dev/agent": "nodelet", corev1.LabelHostname: other.Name}
	if _, err := asNode.CoreV1().Nodes().Create(ctx, registered, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the companion registering its own Node %s: %v", own, err)
	}
	for name, client := range map[string]kubernetes.Interface{"in system:nodes": asNode, "outside system:nodes, with RBAC": asNamed} {
		// NodeRestriction, where it runs, judges a node's writes before
		// the policies (it knows a node by its name); the Node
		// authorizer may refuse a node a token before the policy sees
		// the request.
		want := companionPolicySays
		if f.Env.NodeRestriction {
			want = "forbidden"
		}
		tokenWant := want
		if name == "in system:nodes" {
			tokenWant = "forbidden"
		}
		t.Run("a companion "+name+" writes only its own", func(t *testing.T) {
			checkOwnWritesAllowed(t, client, ns, own, onOwn)
			checkCompanionEscapes(t, client, ns, own, other.Name, elsewhere, want, tokenWant)
		})
	}
	t.Run("a token of nodelet's ServiceAccount only for a kubelet, bound to a pod", func(t *testing.T) {
		creator := podCreator(t, ns, "e2e-fences-creator-"+suffix)
		_, err := f.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, agentSA, &authenticationTokenRequest, metav1.CreateOptions{})
		forbidden(t, "a token of "+agentSA+" for the administrator", err, tokenPolicySays)
		_, err = creator.CoreV1().ServiceAccounts(ns).CreateToken(ctx, agentSA, &authenticationTokenRequest, metav1.CreateOptions{})
		forbidden(t, "a token of "+agentSA+" for a user whose role allows it", err, tokenPolicySays)
		kubelet := f.impersonating(t, "system:node:"+host.NodeName, "system:nodes")
		_, err = kubelet.CoreV1().ServiceAccounts(ns).CreateToken(ctx, agentSA, &authenticationTokenRequest, metav1.CreateOptions{})
		forbidden(t, "a token of "+agentSA+" for a kubelet, bound to no pod", err, "forbidden")
	})
	t.Run("pods that could get nodelet's identity only from the DaemonSet controller", func(t *testing.T) {
		checkPodEscapes(t, podCreator(t, ns, "e2e-fences-pods-"+suffix), ns, release+"-nodelet", agentSA, other.Name)
	})
}

// refusedSaying is nil when err is a refusal saying want.
func refusedSaying(err error, want string) error {
	switch {
	case err == nil:
		return errors.New("allowed")
	case !strings.Contains(err.Error(), want):
		return err
	}
	return nil
}

// authenticationTokenRequest asks for a token bound to no object.
var authenticationTokenRequest = authenticationv1.TokenRequest{
	Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
}

// installFenced installs the chart as release in ns with its DaemonSets
// on no node (a node label no node has), the approver and the hooks off
// unless values say otherwise, and the image from the stack's registry;
// helm uninstall (without hooks) ends it with the test. It returns the
// release's name.
func installFenced(t *testing.T, host hostEnv, release, ns string, values map[string]any) string {
	t.Helper()
	repository, tag, _ := strings.Cut(host.Image[strings.LastIndex(host.Image, "/")+1:], ":")
	repository = host.Image[:strings.LastIndex(host.Image, "/")+1] + repository
	all := map[string]any{
		"image":            map[string]any{"repository": repository, "tag": tag},
		"nodeSelector":     map[string]any{"nodelet.dev/e2e-fences": "no-node"},
		"approver":         map[string]any{"enabled": false},
		"drainCompanions":  map[string]any{"enabled": false},
		"removeCompanions": map[string]any{"enabled": false},
	}
	for key, value := range values {
		all[key] = value
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := helm(t.Context(), "install", release, filepath.Join(root, "charts", "nodelet"), "--namespace", ns, "--values", writeValues(t, all)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := helm(ctx, "uninstall", release, "--namespace", ns, "--no-hooks", "--wait", "--timeout", "90s"); err != nil && !strings.Contains(out, "not found") {
			t.Errorf("cleanup: %v", err)
		}
	})
	return release
}

// impersonating is a client that the API server authorizes and admits as
// user in groups (and system:authenticated).
func (f *Framework) impersonating(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	config := f.adminRESTConfig(t)
	config.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// grantNodeRights gives user, by RBAC, the writes the Node authorizer
// gives a node, cluster-wide, and the creation of ConfigMaps.
func grantNodeRights(t *testing.T, name, user string) {
	t.Helper()
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status"}, Verbs: []string{"create", "patch", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "pods/status"}, Verbs: []string{"create", "patch", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "patch", "update"}},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"csinodes"}, Verbs: []string{"create", "patch", "update"}},
		// Beyond a node's: what no node writes.
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
	}
	bindClusterRole(t, name, rules, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user})
}

// podCreator is a client of a user whose role lets them create pods,
// service account tokens and Secrets in ns.
func podCreator(t *testing.T, ns, user string) kubernetes.Interface {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "secrets", "serviceaccounts/token"}, Verbs: []string{"create"}},
		},
	}
	if _, err := f.Client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := f.Client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return f.impersonating(t, user)
}

// bindClusterRole makes a ClusterRole with rules bound to subject, both
// deleted when the test ends.
func bindClusterRole(t *testing.T, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) {
	t.Helper()
	ctx := t.Context()
	if _, err := f.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := f.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// checkOwnWritesAllowed: what nodelet writes as its node passes (dry
// runs): a label on its own Node and its status, its own Lease and
// CSINode, the status of a pod bound to it and that pod's deletion.
func checkOwnWritesAllowed(t *testing.T, node kubernetes.Interface, ns, own string, pod *corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want it allowed", what, err)
		}
	}
	_, err := node.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, []byte(`{"metadata":{"labels":{"nodelet.dev/e2e-fences":"x","topology.kubernetes.io/zone":"e2e"}}}`), dryRunPatch)
	allowed("labelling its own Node", err)
	_, err = node.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, []byte(`{"status":{"capacity":{"pods":"7"}}}`), dryRunPatch, "status")
	allowed("patching its own Node's status", err)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: own, Namespace: corev1.NamespaceNodeLease}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(own)}}
	_, err = node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, dryRunCreate)
	allowed("creating its own Lease", err)
	_, err = node.StorageV1().CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: own}}, dryRunCreate)
	allowed("creating its own CSINode", err)
	_, err = node.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(`{"status":{"message":"written by its node"}}`), dryRunPatch, "status")
	allowed("patching the status of a pod bound to it", err)
	allowed("deleting a pod bound to it", node.CoreV1().Pods(ns).Delete(ctx, pod.Name, dryRunDelete))
}

// checkCompanionEscapes: each write beyond its own is refused, saying
// want (a token request, tokenWant).
func checkCompanionEscapes(t *testing.T, node kubernetes.Interface, ns, own, other string, elsewhere *corev1.Pod, want, tokenWant string) {
	t.Helper()
	ctx := t.Context()
	label := []byte(`{"metadata":{"labels":{"e2e-fences":"escaped"}}}`)
	_, err := node.CoreV1().Nodes().Patch(ctx, other, types.MergePatchType, label, dryRunPatch)
	forbidden(t, "labelling another Node", err, want)
	_, err = node.CoreV1().Nodes().Patch(ctx, other, types.MergePatchType, []byte(`{"status":{"capacity":{"pods":"7"}}}`), dryRunPatch, "status")
	forbidden(t, "patching another Node's status", err, want)
	_, err = node.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), dryRunPatch)
	forbidden(t, "removing its own Node's taints", err, want)
	_, err = node.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, []byte(`{"metadata":{"labels":{"node-restriction.kubernetes.io/e2e":"x"}}}`), dryRunPatch)
	forbidden(t, "giving its own Node a node-restriction.kubernetes.io label", err, want)
	_, err = node.CoreV1().Nodes().Patch(ctx, own, types.MergePatchType, []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`), dryRunPatch)
	forbidden(t, "giving its own Node a kubernetes.io label kubelets may not set", err, want)
	_, err = node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Patch(ctx, other, types.MergePatchType, []byte(`{"spec":{"holderIdentity":"escaped"}}`), dryRunPatch)
	forbidden(t, "renewing another node's Lease", err, want)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: other + "-not-its-own", Namespace: corev1.NamespaceNodeLease}}
	_, err = node.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, dryRunCreate)
	forbidden(t, "creating a Lease not its own", err, want)
	_, err = node.StorageV1().CSINodes().Patch(ctx, other, types.MergePatchType, label, dryRunPatch)
	forbidden(t, "writing another node's CSINode", err, want)
	_, err = node.CoreV1().Pods(ns).Patch(ctx, elsewhere.Name, types.MergePatchType, []byte(`{"status":{"message":"escaped"}}`), dryRunPatch, "status")
	forbidden(t, "patching the status of a pod bound to another node", err, want)
	forbidden(t, "deleting a pod bound to another node", node.CoreV1().Pods(ns).Delete(ctx, elsewhere.Name, dryRunDelete), want)
	pod := newPod(ns, "made-by-a-node").obj()
	pod.Spec.NodeName = own
	_, err = node.CoreV1().Pods(ns).Create(ctx, pod, dryRunCreate)
	forbidden(t, "creating a pod that is not a mirror pod", err, want)
	_, err = node.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationTokenRequest, metav1.CreateOptions{})
	forbidden(t, "requesting a token bound to no pod", err, tokenWant)
}

// checkPodEscapes: in the release's namespace, a user allowed to create
// pods and Secrets there cannot make one that would get nodelet's
// identity or its host; a plain pod they can.
func checkPodEscapes(t *testing.T, creator kubernetes.Interface, ns, daemonSetName, agentSA, nodeName string) {
	t.Helper()
	ctx := t.Context()
	daemonSet, err := f.Client.AppsV1().DaemonSets(ns).Get(ctx, daemonSetName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forged := newPod(ns, "forged").obj()
	forged.Spec.NodeName = nodeName
	forged.Spec.ServiceAccountName = agentSA
	forged.Labels = daemonSet.Spec.Template.Labels
	forged.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "apps/v1", Kind: "DaemonSet", Name: daemonSet.Name, UID: daemonSet.UID, Controller: ptr.To(true),
	}}
	_, err = creator.CoreV1().Pods(ns).Create(ctx, forged, dryRunCreate)
	forbidden(t, "a pod of nodelet's ServiceAccount with a forged controller reference to its DaemonSet", err, ownerPolicySays)
	_, err = f.Client.CoreV1().Pods(ns).Create(ctx, forged, dryRunCreate)
	forbidden(t, "the same pod, created by the administrator", err, ownerPolicySays)
	forged.Spec.ServiceAccountName = ""
	_, err = creator.CoreV1().Pods(ns).Create(ctx, forged, dryRunCreate)
	forbidden(t, "a pod with a forged controller reference to nodelet's DaemonSet", err, ownerPolicySays)

	privileged := newPod(ns, "privileged").obj()
	privileged.Spec.NodeName = nodeName
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	privileged.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
	_, err = creator.CoreV1().Pods(ns).Create(ctx, privileged, dryRunCreate)
	forbidden(t, "a privileged pod with the host's root", err, hostPolicySays)

	plain := newPod(ns, "plain").obj()
	plain.Spec.NodeName = nodeName
	if _, err := creator.CoreV1().Pods(ns).Create(ctx, plain, dryRunCreate); err != nil {
		t.Errorf("a plain pod in the release's namespace: %v, want it allowed", err)
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: agentSA}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	_, err = creator.CoreV1().Secrets(ns).Create(ctx, secret, dryRunCreate)
	forbidden(t, "a legacy token Secret of nodelet's ServiceAccount", err, secretPolicySays)
}
