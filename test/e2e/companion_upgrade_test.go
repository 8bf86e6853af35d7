package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// checkUpgradeKeepsPod pushes the release's image under a second tag in
// the stack's registry and runs `helm upgrade` to it: the nodelet
// DaemonSet replaces its pod (RollingUpdate) with one of the new tag, the
// runtime DaemonSet (OnDelete) keeps its pod, whose cgroup holds the
// companion's pods, and the companion's pod keeps its container (same ID,
// no restart, same start) and is still served. Returns the new nodelet pod.
func checkUpgradeKeepsPod(t *testing.T, host hostEnv, r companionRelease, agent, runtimePod, pod *corev1.Pod) *corev1.Pod {
	ctx := t.Context()
	colon := strings.LastIndex(host.Image, ":")
	newImage := upgradeImage(host)
	// Within one registry: only the manifest is written again.
	copyCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(copyCtx, "skopeo", "--insecure-policy", "copy", "--quiet", "--src-tls-verify=false", "--dest-tls-verify=false",
		"docker://"+host.Image, "docker://"+newImage).CombinedOutput(); err != nil {
		t.Fatalf("pushing %s as %s: %v: %s", host.Image, newImage, err, out)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	before, err := f.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The install's values, as a user upgrades, with the new tag.
	values := companionValues(host, r)
	values["image"].(map[string]any)["tag"] = newImage[colon+1:]
	if _, err := helm(ctx, "upgrade", r.name, filepath.Join(root, "charts", "nodelet"), "--namespace", r.namespace,
		"--values", writeValues(t, values)); err != nil {
		t.Fatal(err)
	}

	var upgraded *corev1.Pod
	await.Eventually(t, 3*time.Minute, "nodelet's pod of "+newImage+" to be Ready", func(ctx context.Context) error {
		pods, err := f.Client.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/instance=" + r.name + ",app.kubernetes.io/component=agent",
		})
		if err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d nodelet pods", len(pods.Items))
		}
		p := &pods.Items[0]
		c := containerStatus(p, "nodelet")
		if p.UID == agent.UID || c == nil || !strings.HasSuffix(p.Spec.Containers[0].Image, ":"+newImage[colon+1:]) || !c.Ready {
			return fmt.Errorf("pod %s (%s): %s", p.Name, p.Spec.Containers[0].Image, describePod(p))
		}
		upgraded = p
		return nil
	})
	await.Eventually(t, 2*time.Minute, "the companion Node "+r.node+" to be Ready after the upgrade", func(ctx context.Context) error {
		node, err := f.Client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !nodeReady(node) {
			return fmt.Errorf("not Ready: %v", nodeConditions(node))
		}
		return nil
	})
	if now := daemonSetPod(t, r, "runtime"); now.UID != runtimePod.UID {
		t.Errorf("the runtime's pod after helm upgrade: %s (%s), want %s (%s) kept (OnDelete)", now.Name, now.UID, runtimePod.Name, runtimePod.UID)
	}
	checkContainerKept(t, before, "helm upgrade")
	return upgraded
}

// upgradeImage is the image checkUpgradeKeepsPod upgrades the release to:
// the release's, under another tag.
func upgradeImage(host hostEnv) string { return host.Image + "-upgrade" }
