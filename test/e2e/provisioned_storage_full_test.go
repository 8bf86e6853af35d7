//go:build full

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// Fifty pods, each with a claim on a local volume of its own, churned in
// waves while nodelet is killed twice, once as a wave starts and once as
// one is deleted: every pod wrote into its own volume, and once all are
// gone nothing of them is left mounted, nor their folders.
// It kills nodelet, so it runs alone: it does not call t.Parallel.
func TestClaimChurnWithNodeletKilledLeavesNothingMounted(t *testing.T) {
	ns := f.NewNamespace(t)
	const waves, perWave = 5, 10
	type claimed struct {
		pod *corev1.Pod
		dir string
	}
	var all []claimed
	for wave := range waves {
		var current []claimed
		for i := range perWave {
			claim := fmt.Sprintf("data-%d-%d", wave, i)
			pv, dir := f.localVolume(t, ns, claim)
			f.claimVolume(t, ns, claim, pv)
			pod := newPod(ns, fmt.Sprintf("pod-%d-%d", wave, i)).withGracePeriod(1).
				withShell(`hostname > /data/owner && exec sleep 3600`).obj()
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			current = append(current, claimed{pod: f.createPod(t, pod), dir: dir})
		}
		if wave == 1 {
			// Killed while the wave's pods set up their volumes.
			if err := f.Nodelet.Kill(); err != nil {
				t.Fatalf("killing nodelet: %v", err)
			}
			f.restartNodelet(t)
		}
		for i, c := range current {
			current[i].pod = f.waitForPod(t, c.pod, 2*time.Minute, "to be Running and Ready", runningAndReady)
		}
		for _, c := range current {
			f.deletePod(t, c.pod, nil)
		}
		if wave == 3 {
			// Killed while the wave's pods stop and their volumes are
			// torn down.
			if err := f.Nodelet.Kill(); err != nil {
				t.Fatalf("killing nodelet: %v", err)
			}
			f.restartNodelet(t)
		}
		all = append(all, current...)
	}
	for _, c := range all {
		f.waitForPodGone(t, c.pod, 2*time.Minute)
	}
	await.Eventually(t, time.Minute, "nothing of the churned pods to be left on the node", await.Condition(func(ctx context.Context) (bool, error) {
		for _, c := range all {
			dir := f.podDir(c.pod)
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				return false, fmt.Errorf("pod %s's folder %s is still there", c.pod.Name, dir)
			}
			if mounts := f.mountsUnder(t, dir); len(mounts) > 0 {
				return false, fmt.Errorf("pod %s's volumes are still mounted: %v", c.pod.Name, mounts)
			}
		}
		return true, nil
	}))
	for _, c := range all {
		data, err := os.ReadFile(c.dir + "/owner")
		if err != nil || strings.TrimSpace(string(data)) != c.pod.Name {
			t.Errorf("claim folder of pod %s holds owner %q (%v), want the pod's name", c.pod.Name, data, err)
		}
	}
}
