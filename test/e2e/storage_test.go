package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/await"
)

// Storage as a pod's processes see it: fsGroup, volume stats, claims.

// reportLines reads a finished container's log lines of the form
// "KEY rest" into a map.
func (f *Framework) reportLines(t *testing.T, pod *corev1.Pod, container string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range f.containerLogLines(t, pod, container, 0) {
		key, rest, _ := strings.Cut(line, " ")
		got[key] = rest
	}
	return got
}

func TestFSGroupGivesANonRootUserItsVolumes(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	f.createSecret(t, ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("s3cret")}})
	pod := newPod(ns, "fsgroup").withRestartPolicy(corev1.RestartPolicyNever).withShell(strings.Join([]string{
		`echo "GROUPS $(id -G)"`,
		`if echo hello > /data/file; then echo "WROTE $(stat -c '%g' /data/file) $(cat /data/file)"; fi`,
		`echo "DATA-DIR $(stat -c '%g %a' /data)"`,
		`echo "SECRET $(stat -L -c '%g %a' /sec/password) $(cat /sec/password)"`,
		`echo "TOKEN $(stat -L -c '%u %g %a' /var/run/secrets/kubernetes.io/serviceaccount/token)"`,
	}, "; ")).withEmptyDir("data", "/data").obj()
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: "creds", DefaultMode: ptr.To[int32](0o400),
	}}})
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "sec", MountPath: "/sec"})
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Succeeded", succeeded)

	got := f.reportLines(t, pod, "app")
	if groups := strings.Fields(got["GROUPS"]); !slices.Contains(groups, "2000") {
		t.Errorf("id -G in the container: %q, want the fsGroup 2000 among them", got["GROUPS"])
	}
	want := map[string]string{
		// The user writes into the emptyDir, and what it makes there
		// belongs to the fsGroup (setgid).
		"WROTE":    "2000 hello",
		"DATA-DIR": "2000 2777",
		// A secret of mode 0400 is read through the group: 0440.
		"SECRET": "2000 440 s3cret",
		// The token belongs to the pod's one user, readable by its group.
		"TOKEN": "1000 2000 640",
	}
	for key, value := range want {
		if got[key] != value {
			t.Errorf("%s = %q, want %q", key, got[key], value)
		}
	}
}

// statsSummary reads the node's stats summary with the API server's
// client certificate, as metrics-server reads it. (Not through the API
// server's node proxy: it refuses to proxy to the stack's node address,
// a loopback one.)
func (f *Framework) statsSummary(ctx context.Context, cert *tls.Certificate) (*statsapi.Summary, error) {
	code, body, err := f.nodeAPI(ctx, "/stats/summary", cert, "")
	if err != nil {
		return nil, err
	}
	if code != 200 {
		return nil, fmt.Errorf("GET /stats/summary answered %d %.200q", code, body)
	}
	var s statsapi.Summary
	return &s, json.Unmarshal(body, &s)
}

// volumeStats is the named volume's stats of the pod in s, nil when none.
func volumeStats(s *statsapi.Summary, pod *corev1.Pod, volume string) *statsapi.VolumeStats {
	for _, p := range s.Pods {
		if p.PodRef.UID != string(pod.UID) {
			continue
		}
		for i := range p.VolumeStats {
			if p.VolumeStats[i].Name == volume {
				return &p.VolumeStats[i]
			}
		}
	}
	return nil
}

func TestStatsSummaryShowsWhatAContainerWroteIntoItsEmptyDir(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "writer").withShell(`head -c 10485760 /dev/zero > /data/blob && echo written; exec sleep 3600`).withEmptyDir("data", "/data").obj()
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogLine(t, pod, "app", time.Minute, "that it wrote 10 MiB", func(line string) bool { return line == "written" })

	// Usage is measured at most every --volume-stats-agg-period (10 s in
	// the suite): a reading from before the write may be served a while.
	const tenMiB = 10 << 20
	cert := f.kubeletClientCert(t)
	var last *statsapi.VolumeStats
	err := await.Poll(t.Context(), 2*time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		s, err := f.statsSummary(ctx, cert)
		if err != nil {
			return false, err
		}
		last = volumeStats(s, pod, "data")
		return last != nil && last.UsedBytes != nil && *last.UsedBytes >= tenMiB, nil
	}))
	if err != nil {
		data, _ := json.Marshal(last)
		t.Fatalf("the emptyDir's stats never showed 10 MiB used: %v; last seen: %s", err, data)
	}
	if last.PVCRef != nil || last.CapacityBytes == nil || *last.CapacityBytes < tenMiB || last.AvailableBytes == nil ||
		last.InodesUsed == nil || *last.InodesUsed < 2 || last.Inodes == nil || *last.Inodes == 0 {
		data, _ := json.Marshal(last)
		t.Errorf("the emptyDir's stats: %s, want its file system's capacity, what is available, at least 2 inodes used, no pvcRef", data)
	}
}
