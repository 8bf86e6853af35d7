package e2e

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCompanionFailedHooksLeaveNoRights: when a hook of helm uninstall
// fails (its Job past its activeDeadlineSeconds, here 1 s), the uninstall
// fails, and the hook's ServiceAccount, roles and bindings are gone all
// the same: the API server grants its ServiceAccount none of what the
// hook needed (cordoning and evicting, deleting Nodes, creating pods in
// the release's namespace). Both hooks, each in a release of its own (the
// DaemonSets on no node, as in TestCompanionFences).
func TestCompanionFailedHooksLeaveNoRights(t *testing.T) {
	host := loadHostEnv(t)
	ns := f.NewNamespace(t)
	for _, tc := range []struct {
		release, hook, values string
		rights                []authorizationv1.ResourceAttributes
	}{
		{
			release: "failed-drain", hook: "drain-companions", values: "drainCompanions",
			rights: []authorizationv1.ResourceAttributes{
				{Verb: "patch", Resource: "nodes"},
				{Verb: "create", Resource: "pods", Subresource: "eviction", Namespace: "kube-system"},
			},
		},
		{
			release: "failed-remove", hook: "remove-companions", values: "removeCompanions",
			rights: []authorizationv1.ResourceAttributes{
				{Verb: "delete", Resource: "nodes"},
				{Verb: "create", Resource: "pods", Namespace: ns},
			},
		},
	} {
		t.Run("a failed "+tc.hook+" hook", func(t *testing.T) {
			t.Parallel()
			release := tc.release
			installFenced(t, host, release, ns, map[string]any{tc.values: map[string]any{"enabled": true, "activeDeadlineSeconds": 1}})
			out, err := helm(t.Context(), "uninstall", release, "--namespace", ns, "--wait", "--timeout", "2m")
			if err == nil {
				t.Fatalf("helm uninstall %s passed, want its %s hook failed (DeadlineExceeded):\n%s", release, tc.hook, out)
			}
			if !strings.Contains(out, "DeadlineExceeded") {
				t.Errorf("helm uninstall %s failed without naming the hook Job's DeadlineExceeded: %v", release, err)
			}
			checkHookRightsGone(t, ns, release, tc.hook, tc.rights)
		})
	}
}

// checkHookRightsGone: no ServiceAccount, role or binding of the hook is
// left, and the hook's ServiceAccount may do none of rights.
func checkHookRightsGone(t *testing.T, ns, release, hook string, rights []authorizationv1.ResourceAttributes) {
	t.Helper()
	ctx := t.Context()
	selector := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=" + hook}
	var left []string
	if list, err := f.Client.CoreV1().ServiceAccounts(ns).List(ctx, selector); err != nil {
		t.Fatal(err)
	} else {
		for _, o := range list.Items {
			left = append(left, "ServiceAccount "+o.Name)
		}
	}
	if list, err := f.Client.RbacV1().ClusterRoles().List(ctx, selector); err != nil {
		t.Fatal(err)
	} else {
		for _, o := range list.Items {
			left = append(left, "ClusterRole "+o.Name)
		}
	}
	if list, err := f.Client.RbacV1().ClusterRoleBindings().List(ctx, selector); err != nil {
		t.Fatal(err)
	} else {
		for _, o := range list.Items {
			left = append(left, "ClusterRoleBinding "+o.Name)
		}
	}
	if list, err := f.Client.RbacV1().Roles(ns).List(ctx, selector); err != nil {
		t.Fatal(err)
	} else {
		for _, o := range list.Items {
			left = append(left, "Role "+o.Name)
		}
	}
	if list, err := f.Client.RbacV1().RoleBindings(ns).List(ctx, selector); err != nil {
		t.Fatal(err)
	} else {
		for _, o := range list.Items {
			left = append(left, "RoleBinding "+o.Name)
		}
	}
	if len(left) > 0 {
		t.Errorf("the failed %s hook of %s left %s", hook, release, strings.Join(left, ", "))
	}
	user := "system:serviceaccount:" + ns + ":" + release + "-nodelet-" + hook
	for _, attributes := range rights {
		review, err := f.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               user,
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &attributes,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed {
			t.Errorf("after the failed %s hook, %s may still %s %s/%s in %q (%s)", hook, user, attributes.Verb,
				attributes.Resource, attributes.Subresource, attributes.Namespace, review.Status.Reason)
		}
	}
}
