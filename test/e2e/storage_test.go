package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
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

// waitForVolumeUsage waits until /stats/summary shows at least minBytes
// used in the pod's named volume, and returns those stats. Usage is
// measured at most every --volume-stats-agg-period (10 s in the suite): a
// reading from before a write may be served a while.
func (f *Framework) waitForVolumeUsage(t *testing.T, cert *tls.Certificate, pod *corev1.Pod, volume string, minBytes uint64) *statsapi.VolumeStats {
	t.Helper()
	var last *statsapi.VolumeStats
	err := await.Poll(t.Context(), 2*time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		s, err := f.statsSummary(ctx, cert)
		if err != nil {
			return false, err
		}
		last = volumeStats(s, pod, volume)
		return last != nil && last.UsedBytes != nil && *last.UsedBytes >= minBytes, nil
	}))
	if err != nil {
		data, _ := json.Marshal(last)
		t.Fatalf("volume %s of pod %s never showed %d bytes used in /stats/summary: %v; last seen: %s", volume, pod.Name, minBytes, err, data)
	}
	return last
}

func TestStatsSummaryShowsWhatAContainerWroteIntoItsEmptyDir(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "writer").withShell(`head -c 10485760 /dev/zero > /data/blob && echo written; exec sleep 3600`).withEmptyDir("data", "/data").obj()
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogLine(t, pod, "app", time.Minute, "that it wrote 10 MiB", func(line string) bool { return line == "written" })

	const tenMiB = 10 << 20
	cert := f.kubeletClientCert(t)
	last := f.waitForVolumeUsage(t, cert, pod, "data", tenMiB)
	if last.PVCRef != nil || last.CapacityBytes == nil || *last.CapacityBytes < tenMiB || last.AvailableBytes == nil ||
		last.InodesUsed == nil || *last.InodesUsed < 2 || last.Inodes == nil || *last.Inodes == 0 {
		data, _ := json.Marshal(last)
		t.Errorf("the emptyDir's stats: %s, want its file system's capacity, what is available, at least 2 inodes used, no pvcRef", data)
	}
}

// localVolume makes a folder on the node and a local PersistentVolume on
// it, pre-bound to the claim ns/claim, with this node in its
// nodeAffinity; both are removed when the test ends.
func (f *Framework) localVolume(t *testing.T, ns, claim string) (*corev1.PersistentVolume, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "nodelet-e2e-"+ns+"-")
	if err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:       "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: claim},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{f.Env.NodeName}}},
			}}}},
		},
	}
	pv, err = f.Client.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Before the namespace is deleted (cleanups run last first): the
		// test deletes its pods itself, so nothing mounts the folder.
		_ = f.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		_ = os.RemoveAll(dir)
	})
	return pv, dir
}

// claimVolume makes the claim ns/claim for pv, which localVolume made
// pre-bound to it.
func (f *Framework) claimVolume(t *testing.T, ns, claim string, pv *corev1.PersistentVolume) {
	t.Helper()
	if _, err := f.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestLocalVolumeClaimKeepsDataAcrossPodsAndIsReadOnlyWhenClaimedSo(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	claimVolume := func(readOnly bool) corev1.Volume {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: readOnly}}}
	}

	// The writer is bound to the node before its claim exists (the
	// scheduler would hold it back): nodelet makes it wait.
	writer := newPod(ns, "writer").withRestartPolicy(corev1.RestartPolicyNever).
		withShell(`echo "GROUPS $(id -G)"; echo kept > /data/msg && echo "WROTE $(stat -c '%g' /data/msg)"`).obj()
	writer.Spec.NodeName = f.Env.NodeName
	writer.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
	writer.Spec.Volumes = []corev1.Volume{claimVolume(false)}
	writer.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	writer = f.createPod(t, writer)
	f.waitForEvent(t, writer, "FailedMount", fmt.Sprintf(`Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC %s/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found`, ns), time.Minute)
	f.waitForPod(t, writer, 30*time.Second, "to wait in ContainerCreating", waitingWith("app", "ContainerCreating", ""))

	// The claim, pre-bound to a local volume on this node: the
	// controller-manager binds them and the writer starts. The volume
	// names a group its users get.
	pv, dir := f.localVolume(t, ns, "data")
	gid := []byte(`{"metadata":{"annotations":{"pv.beta.kubernetes.io/gid":"3456"}}}`)
	pv, err := f.Client.CoreV1().PersistentVolumes().Patch(t.Context(), pv.Name, types.MergePatchType, gid, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.claimVolume(t, ns, "data", pv)
	writer = f.waitForPod(t, writer, 2*time.Minute, "to be Succeeded once its claim is bound", succeeded)
	got := f.reportLines(t, writer, "app")
	// The non-root user wrote into the root-owned folder through its
	// fsGroup, and its file belongs to the group.
	if !slices.Contains(strings.Fields(got["GROUPS"]), "2000") || got["WROTE"] != "2000" {
		t.Errorf("the writer printed GROUPS %q WROTE %q, want the fsGroup 2000 in both", got["GROUPS"], got["WROTE"])
	}
	if !slices.Contains(strings.Fields(got["GROUPS"]), "3456") {
		t.Errorf("the writer printed GROUPS %q, want the volume's gid annotation 3456 among them", got["GROUPS"])
	}
	writerDir := f.podDir(writer)
	f.deletePod(t, writer, ptr.To[int64](1))
	f.waitForPodGone(t, writer, time.Minute)
	await.Eventually(t, 30*time.Second, "the writer's folder and mounts to be gone", await.Condition(func(ctx context.Context) (bool, error) {
		_, err := os.Stat(writerDir)
		return os.IsNotExist(err) && len(f.mountsUnder(t, writerDir)) == 0, nil
	}))
	if data, err := os.ReadFile(filepath.Join(dir, "msg")); err != nil || string(data) != "kept\n" {
		t.Fatalf("the volume's folder on the node after the writer went: %q %v, want its file", data, err)
	}

	// A reader of the same claim, read-only: it reads what the writer
	// left, and may not write.
	reader := newPod(ns, "reader").withShell(strings.Join([]string{
		`echo "READ $(cat /data/msg)"`,
		writeProbe("DATA", "/data"),
		`exec sleep 3600`,
	}, "; ")).obj()
	reader.Spec.Volumes = []corev1.Volume{claimVolume(true)}
	reader.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	reader = f.createPod(t, reader)
	reader = f.waitForPod(t, reader, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogLine(t, reader, "app", time.Minute, "what the writer left", func(line string) bool { return line == "READ kept" })
	f.waitForLogLine(t, reader, "app", time.Minute, "that it may not write", func(line string) bool { return strings.HasPrefix(line, "DATA-") })
	if lines := f.containerLogLines(t, reader, "app", 0); !slices.Contains(lines, "DATA-REFUSED") {
		t.Errorf("the reader of a read-only claim printed %q, want DATA-REFUSED", lines)
	}

	// The claim's usage, as PVC usage alerts read it.
	cert := f.kubeletClientCert(t)
	want := fmt.Sprintf(`kubelet_volume_stats_used_bytes{namespace="%s",persistentvolumeclaim="data"}`, ns)
	await.Eventually(t, time.Minute, "the claim's kubelet_volume_stats_used_bytes", await.Condition(func(ctx context.Context) (bool, error) {
		code, body, err := f.nodeAPI(ctx, "/metrics", cert, "")
		return err == nil && code == 200 && strings.Contains(string(body), want), err
	}))

	readerDir := f.podDir(reader)
	f.deletePod(t, reader, ptr.To[int64](1))
	f.waitForPodGone(t, reader, time.Minute)
	await.Eventually(t, 30*time.Second, "the reader's folder and mounts to be gone", await.Condition(func(ctx context.Context) (bool, error) {
		_, err := os.Stat(readerDir)
		return os.IsNotExist(err) && len(f.mountsUnder(t, readerDir)) == 0, nil
	}))
}
