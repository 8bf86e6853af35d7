package container

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestContainerIDReadsBackAsTheAPIShowsIt(t *testing.T) {
	id := ParseContainerID("containerd://abc")
	if want := (ContainerID{Type: "containerd", ID: "abc"}); id != want {
		t.Fatalf("ParseContainerID() = %+v, want %+v", id, want)
	}
	if got := id.String(); got != "containerd://abc" {
		t.Errorf("String() = %q, want the API's form", got)
	}
	if got := ParseContainerID("abc"); got != (ContainerID{ID: "abc"}) {
		t.Errorf("a bare ID parsed as %+v", got)
	}
	if got := (ContainerID{}).String(); got != "" {
		t.Errorf("no container's ID = %q, want empty", got)
	}
}

func TestExpandContainerCommandOnlyStaticSeesPlainValuesOnly(t *testing.T) {
	env := []corev1.EnvVar{
		{Name: "PORT", Value: "8080"},
		{Name: "SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}},
	}
	got := ExpandContainerCommandOnlyStatic([]string{"check", "--port=$(PORT)", "--token=$(SECRET)", "$$(PORT)"}, env)
	want := []string{"check", "--port=8080", "--token=", "$(PORT)"}
	// A variable from a source has no plain value: it expands to empty,
	// as under the kubelet.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ExpandContainerCommandOnlyStatic() (-want +got):\n%s", diff)
	}
}

func TestEnvObjectsTellMissingFromUnreadable(t *testing.T) {
	refused := errors.New("forbidden")
	objects := EnvObjects{
		ConfigMaps: map[string]*corev1.ConfigMap{"app": {}},
		Errors:     map[string]error{EnvObjectKey("secret", "creds"): refused},
	}
	if cm, err := objects.ConfigMap("app"); err != nil || cm == nil {
		t.Errorf("ConfigMap(app) = %v, %v, want the one read", cm, err)
	}
	if _, err := objects.ConfigMap("gone"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap(gone) error = %v, want not found", err)
	}
	if _, err := objects.Secret("creds"); !errors.Is(err, refused) {
		t.Errorf("Secret(creds) error = %v, want the read's", err)
	}
}
