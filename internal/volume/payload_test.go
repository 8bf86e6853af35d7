// Tests of the pure parts: which volumes are supported, what files a
// ConfigMap, Secret or the downward API give, the token refresh policy,
// the errors' texts. Plain values in, plain values out.
package volume

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestCheckSupported(t *testing.T) {
	tests := map[string]struct {
		source corev1.VolumeSource
		want   string // the error's text; "" when supported
	}{
		"an emptyDir on disk is supported": {
			source: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		},
		"an emptyDir in memory is supported": {
			source: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}},
		},
		"an emptyDir of huge pages is not": {
			source: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}},
			want:   `volume "v": emptyDir volumes with medium HugePages are not supported by nodelet yet`,
		},
		"hostPath, configMap and secret volumes are supported": {
			source: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}},
		},
		"a PVC is (its volume's type is checked once the claim is bound)": {
			source: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}},
		},
		"a generic ephemeral volume is (its claim is a PVC's)": {
			source: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}},
		},
		"a CSI volume is (its driver decides the rest)": {
			source: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}},
		},
		"an image volume is not": {
			source: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}},
			want:   `volume "v": image volumes are not supported by nodelet yet`,
		},
		"an NFS volume is not": {
			source: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}},
			want:   `volume "v": nfs volumes are not supported by nodelet yet`,
		},
		"a volume without a source is not": {
			want: `volume "v": unknown volumes are not supported by nodelet yet`,
		},
		"a projected volume of tokens, ConfigMaps, Secrets and downward API is supported": {
			source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{}},
				{Secret: &corev1.SecretProjection{}},
				{DownwardAPI: &corev1.DownwardAPIProjection{}},
			}}},
		},
		"a projected cluster trust bundle is not": {
			source: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "ca"}},
			}}},
			want: `volume "v": projected clusterTrustBundle sources are not supported by nodelet yet`,
		},
		"a downward API resource field is": {
			source: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}},
			}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := checkSupported(&corev1.Volume{Name: "v", VolumeSource: tc.source})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var unsupported *UnsupportedVolumeError
			if !errors.As(err, &unsupported) {
				t.Fatalf("error %v is not an UnsupportedVolumeError", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestConfigMapPayload(t *testing.T) {
	cm := &corev1.ConfigMap{
		Data:       map[string]string{"app.yaml": "a: 1", "other": "o"},
		BinaryData: map[string][]byte{"blob": {0, 1, 2}},
	}
	tests := map[string]struct {
		items    []corev1.KeyToPath
		optional bool
		want     map[string]fileProjection
		wantErr  string
	}{
		"every key, text and binary, with the default mode": {
			want: map[string]fileProjection{
				"app.yaml": {Data: []byte("a: 1"), Mode: 0o644},
				"other":    {Data: []byte("o"), Mode: 0o644},
				"blob":     {Data: []byte{0, 1, 2}, Mode: 0o644},
			},
		},
		"only the items, at their paths and modes": {
			items: []corev1.KeyToPath{
				{Key: "app.yaml", Path: "conf/app.yaml", Mode: ptr.To[int32](0o400)},
				{Key: "blob", Path: "blob.bin"},
			},
			want: map[string]fileProjection{
				"conf/app.yaml": {Data: []byte("a: 1"), Mode: 0o400},
				"blob.bin":      {Data: []byte{0, 1, 2}, Mode: 0o644},
			},
		},
		"a missing key is an error": {
			items:   []corev1.KeyToPath{{Key: "nope", Path: "nope"}},
			wantErr: "configmap references non-existent config key: nope",
		},
		"a missing key of an optional ConfigMap is skipped": {
			items:    []corev1.KeyToPath{{Key: "nope", Path: "nope"}, {Key: "other", Path: "other"}},
			optional: true,
			want:     map[string]fileProjection{"other": {Data: []byte("o"), Mode: 0o644}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := configMapPayload(cm, tc.items, 0o644, tc.optional)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSecretPayload(t *testing.T) {
	secret := &corev1.Secret{Data: map[string][]byte{"password": []byte("hunter2")}}

	got, err := secretPayload(secret, nil, 0o400, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]fileProjection{"password": {Data: []byte("hunter2"), Mode: 0o400}}, got); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}

	_, err = secretPayload(secret, []corev1.KeyToPath{{Key: "user", Path: "user"}}, 0o400, false)
	if want := "references non-existent secret key: user"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestDownwardAPIPayload(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-0", Namespace: "shop", UID: "1234",
			Labels:      map[string]string{"app": "web", "tier": "front"},
			Annotations: map[string]string{"note": `say "hi"` + "\n", "a.io/x": "1"},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "web", Containers: []corev1.Container{{
			Name: "app",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			},
		}}},
	}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	field := func(path string) *corev1.ObjectFieldSelector { return &corev1.ObjectFieldSelector{FieldPath: path} }
	res := func(name string, divisor string) *corev1.ResourceFieldSelector {
		return &corev1.ResourceFieldSelector{ContainerName: "app", Resource: name, Divisor: resource.MustParse(divisor)}
	}
	items := []corev1.DownwardAPIVolumeFile{
		{Path: "name", FieldRef: field("metadata.name")},
		{Path: "namespace", FieldRef: field("metadata.namespace")},
		{Path: "uid", FieldRef: field("metadata.uid")},
		{Path: "labels", FieldRef: field("metadata.labels"), Mode: ptr.To[int32](0o600)},
		{Path: "annotations", FieldRef: field("metadata.annotations")},
		{Path: "app", FieldRef: field("metadata.labels['app']")},
		{Path: "note", FieldRef: field("metadata.annotations['note']")},
		{Path: "missing", FieldRef: field("metadata.labels['missing']")},
		{Path: "node", FieldRef: field("spec.nodeName")},
		{Path: "sa", FieldRef: field("spec.serviceAccountName")},
		{Path: "cpu_request", ResourceFieldRef: res("requests.cpu", "1m")},
		{Path: "cpu_limit", ResourceFieldRef: res("limits.cpu", "1")},
		{Path: "mem_limit", ResourceFieldRef: res("limits.memory", "1Mi"), Mode: ptr.To[int32](0o400)},
	}
	got, err := downwardAPIPayload(pod, items, 0o644, allocatable)
	if err != nil {
		t.Fatal(err)
	}
	text := map[string]string{}
	for p, f := range got {
		text[p] = fmt.Sprintf("%s|%o", f.Data, f.Mode)
	}
	want := map[string]string{
		"name":        "web-0|644",
		"namespace":   "shop|644",
		"uid":         "1234|644",
		"labels":      "app=\"web\"\ntier=\"front\"|600",
		"annotations": "a.io/x=\"1\"\nnote=\"say \\\"hi\\\"\\n\"|644",
		"app":         "web|644",
		"note":        "say \"hi\"\n|644",
		"missing":     "|644",
		"node":        "node-1|644",
		"sa":          "web|644",
		"cpu_request": "250|644",
		"cpu_limit":   "3|644",
		"mem_limit":   "64|400",
	}
	if diff := cmp.Diff(want, text); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}

	if _, err := downwardAPIPayload(pod, []corev1.DownwardAPIVolumeFile{{Path: "x", FieldRef: field("status.podIP")}}, 0o644, allocatable); err == nil {
		t.Error("no error for a field the downward API volume does not offer")
	}
	if _, err := downwardAPIPayload(pod, []corev1.DownwardAPIVolumeFile{{Path: "x", ResourceFieldRef: res("limits.cpu", "1")}}, 0o644, nil); err == nil {
		t.Error("no error for a limit defaulted to an allocatable that is unknown")
	}
}

func TestMemoryVolumeSize(t *testing.T) {
	withLimit := func(memory string) corev1.Container {
		c := corev1.Container{}
		if memory != "" {
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
		}
		return c
	}
	sidecar := func(memory string) corev1.Container {
		c := withLimit(memory)
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		return c
	}
	allocatable := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")}
	tests := map[string]struct {
		containers     []corev1.Container
		initContainers []corev1.Container
		podLimit       string
		sizeLimit      string
		allocatable    corev1.ResourceList
		want           int64
	}{
		"the node's allocatable without limits": {
			containers: []corev1.Container{withLimit("")}, allocatable: allocatable, want: 8 << 30,
		},
		"the kernel's default without anything known": {
			containers: []corev1.Container{withLimit("")}, want: 0,
		},
		"a sizeLimit below the node's memory": {
			containers: []corev1.Container{withLimit("")}, sizeLimit: "64Mi", allocatable: allocatable, want: 64 << 20,
		},
		"the pod's containers' limits together": {
			containers: []corev1.Container{withLimit("100Mi"), withLimit("28Mi")}, allocatable: allocatable, want: 128 << 20,
		},
		"a container without a limit leaves the pod without one": {
			containers: []corev1.Container{withLimit("100Mi"), withLimit("")}, allocatable: allocatable, want: 8 << 30,
		},
		"a sizeLimit above the pod's limit": {
			containers: []corev1.Container{withLimit("128Mi")}, sizeLimit: "1Gi", allocatable: allocatable, want: 128 << 20,
		},
		"an init container larger than the rest": {
			containers: []corev1.Container{withLimit("100Mi")}, initContainers: []corev1.Container{withLimit("300Mi")}, allocatable: allocatable, want: 300 << 20,
		},
		"a sidecar runs beside the containers and the init containers after it": {
			containers:     []corev1.Container{withLimit("100Mi")},
			initContainers: []corev1.Container{sidecar("50Mi"), withLimit("120Mi")},
			allocatable:    allocatable, want: 170 << 20,
		},
		"a pod-level limit": {
			containers: []corev1.Container{withLimit("")}, podLimit: "256Mi", allocatable: allocatable, want: 256 << 20,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.containers, InitContainers: tc.initContainers}}
			if tc.podLimit != "" {
				pod.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(tc.podLimit)}}
			}
			var sizeLimit *resource.Quantity
			if tc.sizeLimit != "" {
				sizeLimit = ptr.To(resource.MustParse(tc.sizeLimit))
			}
			if got := memoryVolumeSize(pod, sizeLimit, tc.allocatable); got != tc.want {
				t.Errorf("memoryVolumeSize() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestTokenRefreshPolicy(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		ttl         time.Duration
		wantRefresh time.Duration
	}{
		"the kube-api-access token is refreshed at 80% of its 3607 s": {ttl: 3607 * time.Second, wantRefresh: 2885600 * time.Millisecond},
		"a ten minute token at eight minutes":                         {ttl: 10 * time.Minute, wantRefresh: 8 * time.Minute},
		"a two day token after a day":                                 {ttl: 48 * time.Hour, wantRefresh: 24 * time.Hour},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tok := &token{value: "t", issuedAt: issued, ttl: tc.ttl}
			if got := tok.refreshAt().Sub(issued); got != tc.wantRefresh {
				t.Errorf("refresh after %v, want %v", got, tc.wantRefresh)
			}
			if tok.expired(issued.Add(tc.ttl - time.Second)) {
				t.Error("expired before its lifetime")
			}
			if !tok.expired(issued.Add(tc.ttl)) {
				t.Error("not expired at the end of its lifetime")
			}
		})
	}
}

func TestTokenRequestIsBoundToThePod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "1234"}}
	tests := map[string]struct {
		source *corev1.ServiceAccountTokenProjection
		want   authenticationv1.TokenRequestSpec
	}{
		"no audience leaves the API server's default": {
			source: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)},
			want: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: ptr.To[int64](3607),
				BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "1234"},
			},
		},
		"an audience and the default lifetime": {
			source: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault"},
			want: authenticationv1.TokenRequestSpec{
				Audiences:         []string{"vault"},
				ExpirationSeconds: ptr.To[int64](3600),
				BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-0", UID: "1234"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tokenRequest(pod, tc.source).Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorTexts(t *testing.T) {
	notFound := &MountError{Volume: "kube-api-access-x", Err: apierrors.NewNotFound(corev1.Resource("configmap"), "kube-root-ca.crt")}
	if got, want := notFound.Error(), `MountVolume.SetUp failed for volume "kube-api-access-x" : configmap "kube-root-ca.crt" not found`; got != want {
		t.Errorf("MountError = %q, want %q", got, want)
	}
	if !apierrors.IsNotFound(notFound) {
		t.Error("MountError does not unwrap to its cause")
	}
	unsupported := &UnsupportedVolumeError{Volume: "data", What: "persistentVolumeClaim volumes"}
	if got, want := unsupported.Error(), `volume "data": persistentVolumeClaim volumes are not supported by nodelet yet`; got != want {
		t.Errorf("UnsupportedVolumeError = %q, want %q", got, want)
	}
}

func TestIsUserError(t *testing.T) {
	mountErr := &MountError{Volume: "a", Err: errors.New("configmap \"c\" not found")}
	unsupported := &UnsupportedVolumeError{Volume: "b", What: "csi volumes"}
	bug := fmt.Errorf("setting up volume %q: %w", "c", errors.New("mount: operation not permitted"))
	tests := map[string]struct {
		err        error
		want       bool
		wantErrors []error
	}{
		"no error is not a user error":           {err: nil, want: false},
		"a mount error is":                       {err: mountErr, want: true, wantErrors: []error{mountErr}},
		"an unsupported volume is":               {err: unsupported, want: true, wantErrors: []error{unsupported}},
		"several user errors joined are":         {err: errors.Join(mountErr, unsupported), want: true, wantErrors: []error{mountErr, unsupported}},
		"nodelet's own failure is not":           {err: bug, want: false},
		"a mix is not, but its user errors show": {err: errors.Join(mountErr, bug), want: false, wantErrors: []error{mountErr}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsUserError(tc.err); got != tc.want {
				t.Errorf("IsUserError = %v, want %v", got, tc.want)
			}
			if diff := cmp.Diff(tc.wantErrors, UserErrors(tc.err), cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" { //nolint:errorlint // UserErrors returns the very errors given, not wrapped
				t.Errorf("UserErrors (-want +got):\n%s", diff)
			}
		})
	}
}
