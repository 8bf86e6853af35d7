//go:build full

package e2e

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// The shortest token the API allows lives 10 minutes; nodelet refreshes it
// at 80% of that, as the kubelet does, so this test takes 8 minutes.
func TestProjectedTokenIsRefreshedBeforeItExpires(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "token").
		withShell(`last=; while true; do h=$(md5sum < /tok/token); if [ "$h" != "$last" ]; then echo "TOKEN $h"; last=$h; fi; sleep 1; done`).
		obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: "refresh-test", ExpirationSeconds: ptr.To[int64](600), Path: "token",
		}}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "tok", MountPath: "/tok"}}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	tokenPath := filepath.Join(f.podDir(pod), "volumes", "kubernetes.io~projected", "tok", "token")
	read := func() string {
		data, err := os.ReadFile(tokenPath)
		if err != nil {
			t.Fatalf("reading the pod's token on the node: %v", err)
		}
		return string(data)
	}
	first := read()
	issuedAt, expires := jwtClaims(t, first)
	if lifetime := expires.Sub(issuedAt); lifetime != 10*time.Minute {
		t.Errorf("the token lives %s, want the 10m asked for", lifetime)
	}
	if review := f.reviewTokenFor(t, first, "refresh-test"); !review.Authenticated {
		t.Fatalf("TokenReview of the first token: not authenticated (%q)", review.Error)
	}

	var second string
	await.Eventually(t, time.Until(expires), "the token to be replaced before it expires at "+expires.Format(time.RFC3339), await.Condition(func(ctx context.Context) (bool, error) {
		second = read()
		return second != first, nil
	}))
	replaced := time.Now()
	t.Logf("the token issued at %s was replaced %s later, %s before its expiry",
		issuedAt.Format(time.TimeOnly), replaced.Sub(issuedAt).Round(time.Second), expires.Sub(replaced).Round(time.Second))
	if early := issuedAt.Add(7 * time.Minute); replaced.Before(early) {
		t.Errorf("the token was replaced after %s, want no sooner than about 80%% of its 10 minutes", replaced.Sub(issuedAt))
	}
	if review := f.reviewTokenFor(t, second, "refresh-test"); !review.Authenticated {
		t.Errorf("TokenReview of the new token: not authenticated (%q)", review.Error)
	}

	// The container reads the new token through the same mount.
	sum := md5.Sum([]byte(second))
	wantLine := "TOKEN " + hex.EncodeToString(sum[:]) + "  -"
	f.waitForLogLine(t, pod, "app", 30*time.Second, "the new token's checksum", func(line string) bool { return line == wantLine })
}
