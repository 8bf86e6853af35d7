package e2e

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// Volumes are checked from inside the container: it prints what it sees
// (permission bits, contents, mounts, what it may write) to its log, which
// the test reads from the node.

// fileReport is a shell loop that prints, for each file, a line
// "MODE <path> <octal permission bits>" and a line "DATA <path>=<content>".
func fileReport(paths ...string) string {
	return fmt.Sprintf(`for f in %s; do echo "MODE $f $(stat -L -c %%a $f)"; echo "DATA $f=$(cat $f)"; done`, strings.Join(paths, " "))
}

// writeProbe prints "<label>-WRITABLE" or "<label>-REFUSED" as a file can
// or cannot be made in dir.
func writeProbe(label, dir string) string {
	return fmt.Sprintf(`if touch %s/.probe 2>/dev/null; then echo %s-WRITABLE; else echo %s-REFUSED; fi`, dir, label, label)
}

func TestAPIVolumesWithItemsAndModesAsTheContainerSeesThem(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	f.createConfigMap(t, ns, "app-config", map[string]string{"app.properties": "color=red", "log.level": "debug", "unused": "x"})
	f.createSecret(t, ns, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "app-secret"},
		Data:       map[string][]byte{"password": []byte("s3cret"), "token": []byte("t0k")},
	})

	pod := newPod(ns, "volumes").withRestartPolicy(corev1.RestartPolicyNever).obj()
	pod.Labels = map[string]string{"app": "shop"}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"},
			Items: []corev1.KeyToPath{
				{Key: "app.properties", Path: "conf/app.properties", Mode: ptr.To[int32](0o440)},
				{Key: "log.level", Path: "log-level"},
			},
			DefaultMode: ptr.To[int32](0o640),
		}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "app-secret", DefaultMode: ptr.To[int32](0o400),
		}}},
		{Name: "dapi", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "app", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}, Mode: ptr.To[int32](0o600)},
			{Path: "cpu_limit", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "app", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}},
		}}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o440),
			Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"},
					Items:                []corev1.KeyToPath{{Key: "log.level", Path: "level"}},
				}},
				{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-secret"},
					Items:                []corev1.KeyToPath{{Key: "token", Path: "secret-token", Mode: ptr.To[int32](0o400)}},
				}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}},
				}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "shop-api", ExpirationSeconds: ptr.To[int64](3600), Path: "sa-token"}},
			},
		}}},
		{Name: "optional", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true),
		}}},
	}
	app := &pod.Spec.Containers[0]
	app.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m")}
	app.VolumeMounts = []corev1.VolumeMount{
		{Name: "cm", MountPath: "/cm"}, {Name: "sec", MountPath: "/sec"}, {Name: "dapi", MountPath: "/dapi"},
		{Name: "proj", MountPath: "/proj"}, {Name: "optional", MountPath: "/optional"},
	}
	app.Command = []string{"sh", "-c", strings.Join([]string{
		fileReport("/cm/conf/app.properties", "/cm/log-level", "/sec/password", "/sec/token",
			"/dapi/name", "/dapi/app", "/dapi/cpu_limit", "/proj/level", "/proj/secret-token", "/proj/namespace", "/proj/sa-token"),
		`echo "CM-ENTRIES $(ls /cm | tr '\n' ' ')"`,
		`echo "OPTIONAL-ENTRIES $(ls /optional | wc -l)"`,
		writeProbe("CM", "/cm"), writeProbe("SEC", "/sec"), writeProbe("PROJ", "/proj"),
	}, "; ")}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Succeeded", succeeded)

	got := map[string]string{}
	var token string
	for _, line := range f.containerLogLines(t, pod, "app", 0) {
		switch kind, rest, _ := strings.Cut(line, " "); kind {
		case "MODE":
			path, mode, _ := strings.Cut(rest, " ")
			got["mode "+path] = mode
		case "DATA":
			path, data, _ := strings.Cut(rest, "=")
			if path == "/proj/sa-token" {
				token = data
				continue
			}
			got["data "+path] = data
		default:
			got[kind] = rest
		}
	}
	want := map[string]string{
		"mode /cm/conf/app.properties": "440", "data /cm/conf/app.properties": "color=red",
		"mode /cm/log-level": "640", "data /cm/log-level": "debug",
		"mode /sec/password": "400", "data /sec/password": "s3cret",
		"mode /sec/token": "400", "data /sec/token": "t0k",
		"mode /dapi/name": "644", "data /dapi/name": "volumes",
		"mode /dapi/app": "600", "data /dapi/app": "shop",
		"mode /dapi/cpu_limit": "644", "data /dapi/cpu_limit": "300",
		"mode /proj/level": "440", "data /proj/level": "debug",
		"mode /proj/secret-token": "400", "data /proj/secret-token": "t0k",
		"mode /proj/namespace": "440", "data /proj/namespace": ns,
		"mode /proj/sa-token": "440",
		// Only the listed items; the writer's own entries start with "..".
		"CM-ENTRIES":       "conf log-level ",
		"OPTIONAL-ENTRIES": "0",
	}
	for key, value := range want {
		if got[key] != value {
			t.Errorf("%s = %q, want %q", key, got[key], value)
		}
	}
	// Volumes written from the API are read-only in the container.
	for _, probe := range []string{"CM-REFUSED", "SEC-REFUSED", "PROJ-REFUSED"} {
		if _, ok := got[probe]; !ok {
			t.Errorf("the container did not print %s: it could write into the volume", probe)
		}
	}

	review := f.reviewTokenFor(t, token, "shop-api")
	if !review.Authenticated {
		t.Errorf("TokenReview of the projected token with audience shop-api: not authenticated (%q)", review.Error)
	} else if want := "system:serviceaccount:" + ns + ":default"; review.User.Username != want {
		t.Errorf("the projected token is %q's, want %q's", review.User.Username, want)
	}
}

// reviewTokenFor asks the API server whether token is valid for audience.
func (f *Framework) reviewTokenFor(t *testing.T, token, audience string) authenticationv1.TokenReviewStatus {
	t.Helper()
	review, err := f.Client.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: []string{audience}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a TokenReview: %v", err)
	}
	return review.Status
}

// jwtClaims reads the times of a service account token, without checking
// it (the TokenReview does).
func jwtClaims(t *testing.T, token string) (issuedAt, expires time.Time) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the token is not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("decoding the token's claims: %v", err)
	}
	var claims struct {
		IssuedAt int64 `json:"iat"`
		Expires  int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatalf("reading the token's claims: %v", err)
	}
	return time.Unix(claims.IssuedAt, 0), time.Unix(claims.Expires, 0)
}

// The container reads the volume twice every 200ms: both files through
// the folder ..data points at then, and each file by its own name. Every
// read must be of a whole version (each key is 200 kB, which a writer in
// place could be caught halfway through), and both files of one folder of
// the same version: the update swaps all files at one instant.
func TestConfigMapUpdateReachesTheMountedFilesAtomically(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	ctx := t.Context()
	version := func(v string) map[string]string {
		return map[string]string{"a": strings.Repeat("a"+v, 100_000), "b": strings.Repeat("b"+v, 100_000)}
	}
	checksum := func(s string) string {
		sum := md5.Sum([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	v1, v2 := version("1"), version("2")
	cm := f.createConfigMap(t, ns, "big", v1)

	pod := newPod(ns, "reader").withShell(`while true; do ` +
		`d=$(readlink /cfg/..data); ` +
		`echo "READ $d $(md5sum /cfg/$d/a /cfg/$d/b 2>/dev/null | cut -d' ' -f1 | tr '\n' ' ')/ $(md5sum /cfg/a | cut -d' ' -f1) $(md5sum /cfg/b | cut -d' ' -f1)"; ` +
		`sleep 0.2; done`).obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "big"},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	// read is one line of the container: the folder ..data pointed at, the
	// checksums read through it (none or one when the folder went away
	// meanwhile) and those read by the files' own names.
	type read struct {
		time             time.Time
		folder           string
		snapshot, byName []string
	}
	reads := func() []read {
		var out []read
		for _, entry := range f.containerLogEntries(t, pod, "app") {
			fields := strings.Fields(entry.Line)
			slash := slices.Index(fields, "/")
			if len(fields) < 3 || fields[0] != "READ" || slash < 0 {
				t.Fatalf("the container printed %q, want READ <folder> <sums>... / <a> <b>", entry.Line)
			}
			out = append(out, read{time: entry.Time, folder: fields[1], snapshot: fields[2:slash], byName: fields[slash+1:]})
		}
		return out
	}
	first, second := []string{checksum(v1["a"]), checksum(v1["b"])}, []string{checksum(v2["a"]), checksum(v2["b"])}
	await.Eventually(t, 30*time.Second, "a read of the first version", await.Condition(func(ctx context.Context) (bool, error) {
		r := reads()
		return len(r) > 0 && slices.Equal(r[0].byName, first), nil
	}))

	cm.Data = v2
	if _, err := f.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating ConfigMap big: %v", err)
	}
	updated := time.Now()
	// nodelet reads the ConfigMaps of running pods again within a minute,
	// about as often as the kubelet's pod sync rewrites them; the margin
	// is for a loaded machine.
	const syncPeriod, margin = time.Minute, 15 * time.Second
	// The wait ends on a read of the second version through its own
	// folder too: a read that began just before the swap sees the new
	// files by name but the old folder already gone, and if it were the
	// last one read, the new folder would not be among the reads.
	var seenAt time.Time
	await.Eventually(t, syncPeriod+margin, "the second version in both files and in its folder", await.Condition(func(ctx context.Context) (bool, error) {
		seenAt = time.Time{}
		for _, r := range reads() {
			if seenAt.IsZero() && slices.Equal(r.byName, second) {
				seenAt = r.time
			}
			if slices.Equal(r.byName, second) && slices.Equal(r.snapshot, second) {
				return true, nil
			}
		}
		return false, nil
	}))
	t.Logf("the container read the update %s after it was made", seenAt.Sub(updated).Round(time.Millisecond))

	folders := map[string][]string{}
	var order []string
	for _, r := range reads() {
		if len(r.byName) != 2 {
			t.Errorf("at %s the container could not read both files by their names: %v", r.time.Format(time.TimeOnly), r.byName)
			continue
		}
		for i, key := range []string{"a", "b"} {
			if sum := r.byName[i]; sum != first[i] && sum != second[i] {
				t.Errorf("file %s read by its name at %s with checksum %s: neither version, a half-written file", key, r.time.Format(time.TimeOnly), sum)
			}
		}
		if len(r.snapshot) != 2 {
			continue // the folder was replaced between readlink and md5sum
		}
		if !slices.Equal(r.snapshot, first) && !slices.Equal(r.snapshot, second) {
			t.Errorf("folder %s read at %s held %v: not one whole version", r.folder, r.time.Format(time.TimeOnly), r.snapshot)
		}
		if _, ok := folders[r.folder]; !ok {
			order = append(order, r.folder)
		}
		folders[r.folder] = r.snapshot
	}
	// One folder per version, swapped once.
	if len(order) != 2 || !slices.Equal(folders[order[0]], first) || !slices.Equal(folders[order[1]], second) {
		t.Errorf("..data pointed at %v holding %v, want a folder of the first version, then one of the second", order, folders)
	}
	t.Logf("%d reads, each of a whole version; ..data went from %v", len(reads()), order)
}

// The pod's volumes include every kind that lives on a tmpfs (memory
// emptyDir, secret, the projected service account token) and two that do
// not (disk emptyDir, ConfigMap); once it is deleted, nothing of them is
// left on the node.
func TestEmptyDirSharedMemoryIsATmpfsAndNothingIsLeftAfterDeletion(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	f.createConfigMap(t, ns, "settings", map[string]string{"k": "v"})
	f.createSecret(t, ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"k": []byte("v")}})
	pod := newPod(ns, "shared").withShell(`echo hello > /shared/msg; exec sleep 3600`).obj()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "mem", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("16Mi")),
		}}},
		{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}, {Name: "cm", MountPath: "/cm"}, {Name: "sec", MountPath: "/sec"}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
		Name: "reader", Image: busyboxImage, ImagePullPolicy: corev1.PullIfNotPresent,
		Command:      []string{"sh", "-c", `until [ -f /shared/msg ]; do sleep 0.1; done; echo "MSG $(cat /shared/msg)"; echo "MOUNT $(grep ' /mem ' /proc/mounts)"; exec sleep 3600`},
		VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}, {Name: "mem", MountPath: "/mem"}},
	})
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	f.waitForLogLine(t, pod, "reader", 30*time.Second, "the other container's message", func(line string) bool { return line == "MSG hello" })
	mount := f.waitForLogLine(t, pod, "reader", 30*time.Second, "its view of /mem", func(line string) bool { return strings.HasPrefix(line, "MOUNT ") })
	if fields := strings.Fields(mount); len(fields) < 5 || fields[3] != "tmpfs" || !strings.Contains(fields[4], "size=16384k") {
		t.Errorf("/mem in the container's /proc/mounts: %q, want a tmpfs of size=16384k", mount)
	}

	podDir := f.podDir(pod)
	tokens, _ := filepath.Glob(filepath.Join(podDir, "volumes", "kubernetes.io~projected", "*", "token"))
	mounts := f.mountsUnder(t, podDir)
	t.Logf("the running pod has mounts %v and token files %v", mounts, tokens)
	// The memory emptyDir, the secret and the token's projected volume.
	if len(mounts) < 3 || len(tokens) != 1 {
		t.Fatalf("the running pod has mounts %v and tokens %v, want at least 3 tmpfs and a token, or their removal proves nothing", mounts, tokens)
	}
	f.deletePod(t, pod, ptr.To[int64](1))
	f.waitForPodGone(t, pod, time.Minute)
	await.Eventually(t, 10*time.Second, "the pod's folder, mounts and token to be gone", await.Condition(func(ctx context.Context) (bool, error) {
		_, err := os.Stat(podDir)
		return os.IsNotExist(err) && len(f.mountsUnder(t, podDir)) == 0, nil
	}))
}

func TestHostPathDirectoryTypeFailsClearlyUntilTheFolderExists(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	missing := filepath.Join(os.TempDir(), "nodelet-e2e-"+ns+"-missing")
	created := filepath.Join(os.TempDir(), "nodelet-e2e-"+ns+"-created")
	t.Cleanup(func() {
		os.RemoveAll(missing)
		os.RemoveAll(created)
	})

	pod := newPod(ns, "host-paths").obj()
	hostPath := func(name, path string, pathType corev1.HostPathType) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: path, Type: ptr.To(pathType),
		}}})
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/" + name})
	}
	hostPath("directory", missing, corev1.HostPathDirectory)
	hostPath("or-create", created, corev1.HostPathDirectoryOrCreate)
	pod = f.createPod(t, pod)

	want := fmt.Sprintf(`MountVolume.SetUp failed for volume "directory" : hostPath type check failed: %s is not a directory`, missing)
	f.waitForEvent(t, pod, "FailedMount", want, time.Minute)
	current, err := f.Client.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if current.Status.Phase != corev1.PodPending || waitingReason(current, "app") != "ContainerCreating" {
		t.Errorf("pod with a missing hostPath: %s, want Pending with app waiting in ContainerCreating", describePod(current))
	}
	// The other volume is set up meanwhile: DirectoryOrCreate made it.
	if info, err := os.Stat(created); err != nil || !info.IsDir() {
		t.Errorf("DirectoryOrCreate: %s on the node: %v, want a folder", created, err)
	}

	// Once the folder exists, the waiting pod starts by itself.
	if err := os.Mkdir(missing, 0o755); err != nil {
		t.Fatal(err)
	}
	f.waitForPod(t, pod, time.Minute, "to start once its folder exists", runningAndReady)
}

// TestUnsupportedVolumeIsAFailedMountAndThePodWaits: a volume type nodelet
// does not mount (nfs), and an inline CSI volume of a driver that has no
// CSIDriver object (so none that allows inline volumes), each give a
// FailedMount event with its reason, and the pod waits.
func TestUnsupportedVolumeIsAFailedMountAndThePodWaits(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	for name, c := range map[string]struct {
		source corev1.VolumeSource
		want   string
	}{
		"nfs": {
			source: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/"}},
			want:   `volume "data": nfs volumes are not supported by nodelet yet`,
		},
		"csi": {
			source: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "inline.example.com"}},
			want:   `MountVolume.SetUp failed for volume "data" : volume mode "Ephemeral" not supported by driver inline.example.com (no CSIDriver object)`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pod := newPod(ns, name).obj()
			pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: c.source}}
			pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
			pod = f.createPod(t, pod)
			f.waitForEvent(t, pod, "FailedMount", c.want, time.Minute)
			f.waitForPod(t, pod, 30*time.Second, "to wait in ContainerCreating", waitingWith("app", "ContainerCreating", ""))
		})
	}
}

func TestSubPathSubPathExprAndReadOnlyMounts(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	f.createConfigMap(t, ns, "files", map[string]string{"app.conf": "a=1", "other": "x"})
	pod := newPod(ns, "subpaths").obj()
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "files", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "files"}}}},
	}
	app := &pod.Spec.Containers[0]
	app.Env = []corev1.EnvVar{fieldRefEnv("POD_NAME", "metadata.name")}
	app.VolumeMounts = []corev1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/sub", SubPath: "sub/dir"},
		{Name: "data", MountPath: "/mine", SubPathExpr: "per-pod/$(POD_NAME)"},
		{Name: "data", MountPath: "/ro", ReadOnly: true},
		{Name: "files", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		{Name: "files", MountPath: "/files"},
	}
	app.Command = []string{"sh", "-c", strings.Join([]string{
		`echo one > /sub/file`,
		`echo two > /mine/file`,
		`echo "SUB $(cat /data/sub/dir/file)"`,
		`echo "MINE $(cat /data/per-pod/$POD_NAME/file)"`,
		`echo "CONF $(cat /etc/app.conf)"`,
		`echo "ETC $(ls /etc | grep -c app.conf)"`,
		writeProbe("DATA", "/data"), writeProbe("RO", "/ro"), writeProbe("FILES", "/files"),
		`if echo b=2 > /etc/app.conf 2>/dev/null; then echo CONF-WRITABLE; else echo CONF-REFUSED; fi`,
		`echo DONE`,
		// Running on, so that its volume is still on the node to look at.
		`exec sleep 3600`,
	}, "; ")}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogLine(t, pod, "app", 30*time.Second, "DONE", func(line string) bool { return line == "DONE" })

	lines := f.containerLogLines(t, pod, "app", 0)
	for _, want := range []string{
		"SUB one",       // a sub path is a folder of the volume, made when missing
		"MINE two",      // subPathExpr expands the container's env
		"CONF a=1",      // a sub path of a ConfigMap volume is one file
		"ETC 1",         // mounted as that one file, beside the image's own
		"DATA-WRITABLE", // an emptyDir is the container's to write
		"RO-REFUSED",    // unless mounted readOnly
		"FILES-REFUSED", // a ConfigMap volume is read-only whatever the mount says
		"CONF-REFUSED",  // and so is a sub path of it
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("the container did not print %q; it printed %q", want, lines)
		}
	}
	// The sub paths are folders of the volume on the node too.
	volume := filepath.Join(f.podDir(pod), "volumes", "kubernetes.io~empty-dir", "data")
	for _, path := range []string{"sub/dir/file", "per-pod/subpaths/file"} {
		if _, err := os.Stat(filepath.Join(volume, path)); err != nil {
			t.Errorf("%s in the emptyDir on the node: %v", path, err)
		}
	}
}

// A privileged container mounts a tmpfs inside a Bidirectional volume; a
// container with HostToContainer propagation sees it, one without does
// not, and the node does. Deleting the pod leaves no mount behind.
func TestMountPropagationBetweenContainersAndTheNode(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "propagation").obj()
	pod.Spec.Volumes = []corev1.Volume{{Name: "vol", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mountAt := func(mode corev1.MountPropagationMode) []corev1.VolumeMount {
		return []corev1.VolumeMount{{Name: "vol", MountPath: "/mnt/vol", MountPropagation: ptr.To(mode)}}
	}
	// Each seer says it runs with a file, so that the mount is made after
	// their containers were created: a container created later would get
	// a copy of it whatever its propagation.
	seer := func(name string, mode corev1.MountPropagationMode) corev1.Container {
		return corev1.Container{
			Name: name, Image: busyboxImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command:      []string{"sh", "-c", `touch /mnt/vol/` + name + `-runs; while true; do if [ -f /mnt/vol/inner/file ]; then echo SEES; else echo BLIND; fi; sleep 1; done`},
			VolumeMounts: mountAt(mode),
		}
	}
	pod.Spec.Containers = []corev1.Container{
		{
			Name: "app", Image: busyboxImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", `until [ -f /mnt/vol/slave-runs ] && [ -f /mnt/vol/private-runs ]; do sleep 0.1; done; ` +
				`mkdir -p /mnt/vol/inner && mount -t tmpfs tmpfs /mnt/vol/inner && echo hi > /mnt/vol/inner/file && echo MOUNTED; exec sleep 3600`},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
			VolumeMounts:    mountAt(corev1.MountPropagationBidirectional),
		},
		seer("slave", corev1.MountPropagationHostToContainer),
		seer("private", corev1.MountPropagationNone),
	}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)

	f.waitForLogLine(t, pod, "app", 30*time.Second, "MOUNTED", func(line string) bool { return line == "MOUNTED" })
	f.waitForLogLine(t, pod, "slave", 30*time.Second, "SEES", func(line string) bool { return line == "SEES" })
	seenAt := time.Now()
	// A private view checked after the slave saw the mount: it never
	// sees the file.
	await.Eventually(t, 30*time.Second, "the private container to look again", await.Condition(func(ctx context.Context) (bool, error) {
		entries := f.containerLogEntries(t, pod, "private")
		return len(entries) > 0 && entries[len(entries)-1].Time.After(seenAt), nil
	}))
	for _, entry := range f.containerLogEntries(t, pod, "private") {
		if entry.Line != "BLIND" {
			t.Errorf("the container without propagation printed %q at %s: it saw the other container's mount", entry.Line, entry.Time.Format(time.TimeOnly))
			break
		}
	}

	inner := filepath.Join(f.podDir(pod), "volumes", "kubernetes.io~empty-dir", "vol", "inner")
	if types := f.fsTypesAt(t, inner); !slices.Contains(types, "tmpfs") {
		t.Errorf("mounts at %s on the node: %v, want the container's tmpfs", inner, types)
	}

	f.deletePod(t, pod, ptr.To[int64](1))
	f.waitForPodGone(t, pod, time.Minute)
	await.Eventually(t, 10*time.Second, "no mount left under the pod's folder", await.Condition(func(ctx context.Context) (bool, error) {
		return len(f.mountsUnder(t, f.podDir(pod))) == 0, nil
	}))
}

// mountsUnder lists the mount points at or below dir on the node.
func (f *Framework) mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var under []string
	for _, m := range readMounts(t) {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			under = append(under, m.Point)
		}
	}
	return under
}

// fsTypesAt lists the file system types mounted at path on the node.
func (f *Framework) fsTypesAt(t *testing.T, path string) []string {
	t.Helper()
	var types []string
	for _, m := range readMounts(t) {
		if m.Point == path {
			types = append(types, m.FSType)
		}
	}
	return types
}

// readMounts reads the node's mount table (NodeMounts).
func readMounts(t *testing.T) []NodeMount {
	t.Helper()
	mounts, err := NodeMounts()
	if err != nil {
		t.Fatal(err)
	}
	return mounts
}

// A change of the pod's labels reaches its downward API files in place,
// without waiting for the periodic resync.
func TestDownwardAPIFilesFollowThePodsLabels(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	pod := newPod(ns, "labelled").
		withShell(`last=; while true; do l=$(tr '\n' ' ' < /podinfo/labels); if [ "$l" != "$last" ]; then echo "LABELS $l"; last=$l; fi; sleep 0.5; done`).
		obj()
	pod.Labels = map[string]string{"stage": "one"}
	pod.Spec.Volumes = []corev1.Volume{{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
	}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "podinfo", MountPath: "/podinfo"}}
	pod = f.createPod(t, pod)
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogLine(t, pod, "app", 30*time.Second, "its first labels", func(line string) bool { return line == `LABELS stage="one"` })

	patch := []byte(`{"metadata": {"labels": {"stage": "two"}}}`)
	if _, err := f.Client.CoreV1().Pods(ns).Patch(t.Context(), pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("relabelling the pod: %v", err)
	}
	relabelled := time.Now()
	// Well within the minute of the periodic resync.
	f.waitForLogLine(t, pod, "app", 20*time.Second, "its new labels", func(line string) bool { return line == `LABELS stage="two"` })
	t.Logf("the container read its new labels %s after the change", time.Since(relabelled).Round(time.Millisecond))
}

// A sub path is bound for the runtime from what nodelet opened without
// following links, under the pod's folder: a sub path that is a symlink
// out of the volume (one the pod made itself) is refused with the
// kubelet's reason and words, an ordinary one works through its bind
// mount, and the mount goes with the pod.
func TestSubPathSymlinkOutOfTheVolumeIsRefusedAndAnOrdinaryOneIsBound(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	withData := func(name, script, subPath string) *corev1.Pod {
		pod := newPod(ns, name).withInitContainer("prepare", script).obj()
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		pod.Spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
			{Name: "data", MountPath: "/data"},
			{Name: "data", MountPath: "/sub", SubPath: subPath},
		}
		return pod
	}

	// The link points at the node's root once seen from the node.
	escaping := f.createPod(t, withData("escaping", "ln -s / /data/escape", "escape"))
	want := `failed to prepare subPath for volumeMount "data" of container "app"`
	f.waitForPod(t, escaping, podStartTimeout, "to wait in CreateContainerConfigError", waitingWith("app", "CreateContainerConfigError", want))
	f.waitForEvent(t, escaping, "Failed", "Error: "+want, 30*time.Second)

	ordinary := withData("ordinary", "mkdir -p /data/dir && echo from-init > /data/dir/file", "dir")
	ordinary.Spec.Containers[0].Command = []string{"sh", "-c", `echo "SUB $(cat /sub/file)"; echo from-app > /sub/other; echo DONE; exec sleep 3600`}
	ordinary = f.createPod(t, ordinary)
	ordinary = f.waitForPod(t, ordinary, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForLogLine(t, ordinary, "app", 30*time.Second, "DONE", func(line string) bool { return line == "DONE" })
	if lines := f.containerLogLines(t, ordinary, "app", 0); !slices.Contains(lines, "SUB from-init") {
		t.Errorf("the container did not read the sub path's file; it printed %q", lines)
	}
	volume := filepath.Join(f.podDir(ordinary), "volumes", "kubernetes.io~empty-dir", "data")
	if data, err := os.ReadFile(filepath.Join(volume, "dir", "other")); err != nil || string(data) != "from-app\n" {
		t.Errorf("the file written through the sub path, in the volume on the node: %q, %v", data, err)
	}
	// The runtime mounted the bind under the pod's folder (the second
	// volume mount: index 1), not the volume's path itself.
	bound := filepath.Join(f.podDir(ordinary), "volume-subpaths", "data", "app", "1")
	resolved, err := filepath.EvalSymlinks(bound)
	if err != nil {
		t.Fatalf("the sub path's bind mount %s: %v", bound, err)
	}
	if got := f.fsTypesAt(t, resolved); len(got) != 1 {
		t.Errorf("mounts at %s = %v, want the sub path's bind mount", resolved, got)
	}

	f.deletePod(t, ordinary, ptr.To[int64](0))
	f.waitForPodGone(t, ordinary, podStartTimeout)
	await.Eventually(t, 30*time.Second, "the pod's folder and its mounts to go", await.Condition(func(context.Context) (bool, error) {
		for _, m := range readMounts(t) {
			if strings.HasPrefix(m.Point, resolved) {
				return false, nil
			}
		}
		_, err := os.Stat(f.podDir(ordinary))
		return os.IsNotExist(err), nil
	}))

}
