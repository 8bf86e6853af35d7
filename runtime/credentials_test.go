package runtime

// Pull secrets to CRI auth: the matching is pure (secrets and an image in,
// logins out); the pulls run against the CRI image fake, wrapped to accept
// only one login, as a registry that requires it does.

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// dockerConfigJSONSecret is a kubernetes.io/dockerconfigjson Secret with
// one login per registry.
func dockerConfigJSONSecret(name string, logins map[string]string) corev1.Secret {
	var entries []string
	for registry, userPassword := range logins {
		auth := base64.StdEncoding.EncodeToString([]byte(userPassword))
		entries = append(entries, fmt.Sprintf("%q: {\"auth\": %q}", registry, auth))
	}
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {` + strings.Join(entries, ", ") + `}}`)},
	}
}

func login(user, password string) *runtimeapi.AuthConfig {
	return &runtimeapi.AuthConfig{Username: user, Password: password}
}

func TestPullCredentials(t *testing.T) {
	cases := map[string]struct {
		secrets []corev1.Secret
		image   string
		want    []*runtimeapi.AuthConfig
	}{
		"no secrets, no login": {
			image: "registry.example.com/app:1",
		},
		"a login for the image's registry": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("s", map[string]string{"registry.example.com": "alice:pw"})},
			image:   "registry.example.com/app:1",
			want:    []*runtimeapi.AuthConfig{login("alice", "pw")},
		},
		"a registry with a port, written as a URL with the API path": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("s", map[string]string{"https://127.0.0.1:5101/v2/": "alice:pw"})},
			image:   "127.0.0.1:5101/private/busybox:1.35",
			want:    []*runtimeapi.AuthConfig{login("alice", "pw")},
		},
		"another port is another registry": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("s", map[string]string{"127.0.0.1:5100": "alice:pw"})},
			image:   "127.0.0.1:5101/private/busybox:1.35",
		},
		"another host is another registry": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("s", map[string]string{"other.example.com": "alice:pw"})},
			image:   "registry.example.com/app:1",
		},
		"a host glob": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("s", map[string]string{"*.example.com": "alice:pw"})},
			image:   "registry.example.com/app:1",
			want:    []*runtimeapi.AuthConfig{login("alice", "pw")},
		},
		"a glob matches one part only": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("s", map[string]string{"*.example.com": "alice:pw"})},
			image:   "a.b.example.com/app:1",
		},
		"a login for a path serves the repositories below it, first": {
			secrets: []corev1.Secret{
				dockerConfigJSONSecret("host", map[string]string{"registry.example.com": "host:pw"}),
				dockerConfigJSONSecret("team", map[string]string{"registry.example.com/team": "team:pw"}),
			},
			image: "registry.example.com/team/app:1",
			want:  []*runtimeapi.AuthConfig{login("team", "pw"), login("host", "pw")},
		},
		"a login for another path does not serve the image": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("team", map[string]string{"registry.example.com/team": "team:pw"})},
			image:   "registry.example.com/other/app:1",
		},
		"every secret's login for one registry, in the pod's order": {
			secrets: []corev1.Secret{
				dockerConfigJSONSecret("old", map[string]string{"registry.example.com": "old:pw"}),
				dockerConfigJSONSecret("new", map[string]string{"registry.example.com": "new:pw"}),
			},
			image: "registry.example.com/app",
			want:  []*runtimeapi.AuthConfig{login("old", "pw"), login("new", "pw")},
		},
		"Docker Hub's login serves short names": {
			secrets: []corev1.Secret{dockerConfigJSONSecret("hub", map[string]string{"https://index.docker.io/v1/": "alice:pw"})},
			image:   "busybox",
			want:    []*runtimeapi.AuthConfig{login("alice", "pw")},
		},
		"a legacy dockercfg secret, user and password in their own fields": {
			secrets: []corev1.Secret{{
				Type: corev1.SecretTypeDockercfg,
				Data: map[string][]byte{corev1.DockerConfigKey: []byte(`{"registry.example.com": {"username": "alice", "password": "pw"}}`)},
			}},
			image: "registry.example.com/app:1",
			want:  []*runtimeapi.AuthConfig{login("alice", "pw")},
		},
		"secrets of other types and unreadable ones are ignored": {
			secrets: []corev1.Secret{
				{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"registry.example.com": {"auth": "YTpi"}}}`)}},
				{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`not json`)}},
				{Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"registry.example.com": {"auth": "bm9jb2xvbg=="}}}`)}},
				dockerConfigJSONSecret("good", map[string]string{"registry.example.com": "alice:pw"}),
			},
			image: "registry.example.com/app:1",
			want:  []*runtimeapi.AuthConfig{login("alice", "pw")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			creds, _ := credentialsFromSecrets(tc.secrets)
			got := pullCredentials(creds, tc.image)
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("pullCredentials(%q) (-want +got):\n%s", tc.image, diff)
			}
		})
	}
}

func TestCredentialsFromSecretsReportsWhatItCannotRead(t *testing.T) {
	_, errs := credentialsFromSecrets([]corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{`)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "no-colon"}, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"r.example.com": {"auth": "bm9jb2xvbg=="}}}`)}},
	})
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "pull secret broken") || !strings.Contains(errs[1].Error(), `pull secret no-colon, registry "r.example.com"`) {
		t.Errorf("credentialsFromSecrets() errors = %v, want one for each secret, naming it", errs)
	}
}

// loginRegistry is the CRI image fake behind a registry that pulls only
// for one login, failing as containerd reports a registry's 401.
type loginRegistry struct {
	*critest.FakeImageService
	want  *runtimeapi.AuthConfig
	tried []*runtimeapi.AuthConfig
}

func (r *loginRegistry) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	r.tried = append(r.tried, auth)
	if auth.GetUsername() != r.want.Username || auth.GetPassword() != r.want.Password {
		return "", status.Errorf(codes.Unknown, "failed to pull and unpack image %q: 401 Unauthorized", image.Image)
	}
	return r.FakeImageService.PullImage(ctx, image, auth, sandbox)
}

func TestEnsureImageLogsInWithThePodsPullSecrets(t *testing.T) {
	const image = "127.0.0.1:5101/private/busybox:1.35"
	wrong := dockerConfigJSONSecret("wrong", map[string]string{"127.0.0.1:5101": "mallory:guess"})
	right := dockerConfigJSONSecret("right", map[string]string{"127.0.0.1:5101": "puller:pw"})
	cases := map[string]struct {
		secrets    []corev1.Secret
		wantTried  []*runtimeapi.AuthConfig
		wantReason string
	}{
		"the right login pulls": {
			secrets:   []corev1.Secret{right},
			wantTried: []*runtimeapi.AuthConfig{login("puller", "pw")},
		},
		"each login is tried until one pulls": {
			secrets:   []corev1.Secret{wrong, right},
			wantTried: []*runtimeapi.AuthConfig{login("mallory", "guess"), login("puller", "pw")},
		},
		"without a login the registry refuses": {
			wantTried:  []*runtimeapi.AuthConfig{nil},
			wantReason: kubecontainer.ReasonErrImagePull,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			registry := &loginRegistry{FakeImageService: critest.NewFakeImageService(), want: login("puller", "pw")}
			clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
			puller := newImagePuller(registry, record.NewFakeRecorder(100), clk)

			pod := imageTestPod("uid-1", image, corev1.PullAlways)
			container := &pod.Spec.Containers[0]
			ref, cerr := puller.ensureImage(context.Background(), containerRef(pod, container), pod, container, &runtimeapi.PodSandboxConfig{}, tc.secrets)
			if diff := cmp.Diff(tc.wantTried, registry.tried, protocmp.Transform()); diff != "" {
				t.Errorf("logins tried (-want +got):\n%s", diff)
			}
			if tc.wantReason != "" {
				if cerr == nil || cerr.Reason != tc.wantReason || !strings.Contains(cerr.Message, "401 Unauthorized") {
					t.Fatalf("ensureImage() error = %v, want %s with the registry's 401", cerr, tc.wantReason)
				}
				return
			}
			if cerr != nil || ref != image {
				t.Fatalf("ensureImage() = %q, %v, want %q", ref, cerr, image)
			}
		})
	}
}
