package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

// ociLayout writes an OCI image layout holding one image tagged tag, as
// hack/build-image.sh leaves it (index.json naming the manifest by digest,
// the blobs by their sha256), and returns the manifest's digest, computed
// here from its bytes. The image has no layers: release-manifests.sh reads
// only the index.
func ociLayout(t *testing.T, dir, tag string) string {
	t.Helper()
	blob := func(data []byte) string {
		sum := sha256.Sum256(data)
		hexSum := hex.EncodeToString(sum[:])
		if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", hexSum), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return "sha256:" + hexSum
	}
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]},"config":{}}`)
	manifest := must(json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(config), "size": len(config)},
		"layers":        []any{},
	}))
	digest := blob(manifest)
	index := must(json.Marshal(map[string]any{
		"schemaVersion": 2,
		"manifests": []any{map[string]any{
			"mediaType":   "application/vnd.oci.image.manifest.v1+json",
			"digest":      digest,
			"size":        len(manifest),
			"annotations": map[string]string{"org.opencontainers.image.ref.name": tag},
		}},
	}))
	if err := os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return digest
}

func releaseManifests(t *testing.T, root, out, layout string, env ...string) ([]string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "hack", "release-manifests.sh"), out)
	cmd.Env = append(append(os.Environ(), "VERSION=", "IMAGE_LAYOUT="+layout), env...)
	stdout, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil, errors.New(string(exit.Stderr))
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(stdout)), nil
}

var imageLine = regexp.MustCompile(`(?m)^\s*(?:- )?image: (\S+)\s*$`)

// images are the image references of a YAML stream, each once.
func images(yaml []byte) []string {
	var refs []string
	for _, m := range imageLine.FindAllSubmatch(yaml, -1) {
		if ref := strings.Trim(string(m[1]), `"`); !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	return refs
}

func TestReleasedManifestsPinTheBuiltImageByDigest(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(root, ".cache", "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		prereq.Missing(t, "no helm at %s: hack/build-tools.sh helm builds it", helm)
	}
	prereq.Tools(t, "kubectl", "sha256sum", "tar", "python3")
	version := regexp.MustCompile(`const baseVersion = "(.*)"`).FindSubmatch(must(os.ReadFile(filepath.Join(root, "version.go"))))[1]
	layout := t.TempDir()
	digest := ociLayout(t, layout, string(version))
	out := t.TempDir()
	written, err := releaseManifests(t, root, out, layout)
	if err != nil {
		t.Fatalf("hack/release-manifests.sh: %v", err)
	}
	if len(written) != 2 {
		t.Fatalf("hack/release-manifests.sh printed %q, want the chart and the config tarball", written)
	}
	chart, config := written[0], written[1]
	want := "ghcr.io/nodelet/nodelet@" + digest

	// The packaged chart, with its default values: every image by digest.
	rendered, err := exec.CommandContext(t.Context(), helm, "template", "nodelet", chart, "--namespace", "nodelet-system", "--kube-version", "v1.36.3").Output()
	if err != nil {
		t.Fatalf("helm template %s: %v", filepath.Base(chart), err)
	}
	if got := images(rendered); !slices.Equal(got, []string{want}) {
		t.Errorf("the released chart runs images %q, want only %s", got, want)
	}
	// Its values say so, for `helm show values`.
	values, err := exec.CommandContext(t.Context(), helm, "show", "values", chart).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), "\n  digest: "+digest+"\n") {
		t.Errorf("the released chart's values do not set image.digest to %s", digest)
	}

	// config/, unpacked and rendered by kustomize: the same.
	unpacked := t.TempDir()
	if out, err := exec.CommandContext(t.Context(), "tar", "-xzf", config, "-C", unpacked).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf %s: %v\n%s", config, err, out)
	}
	kustomized, err := exec.CommandContext(t.Context(), "kubectl", "kustomize", filepath.Join(unpacked, "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize the released config/default: %v", err)
	}
	if got := images(kustomized); !slices.Equal(got, []string{want}) {
		t.Errorf("the released config/default runs images %q, want only %s", got, want)
	}
	if strings.Contains(string(kustomized), "nodelet:latest") {
		t.Error("the released config/default names nodelet:latest")
	}

	// SHA256SUMS covers both, and verifies.
	sums := string(must(os.ReadFile(filepath.Join(out, "SHA256SUMS"))))
	for _, file := range []string{filepath.Base(chart), filepath.Base(config)} {
		if !strings.Contains(sums, "  "+file+"\n") {
			t.Errorf("SHA256SUMS does not list %s:\n%s", file, sums)
		}
	}
	if out, err := sha256sumCheck(t, out); err != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}

	// Another registry: the repository follows, the digest stays.
	other := t.TempDir()
	written, err = releaseManifests(t, root, other, layout, "IMAGE_REPOSITORY=registry.example:5000/nodelet")
	if err != nil {
		t.Fatalf("hack/release-manifests.sh with IMAGE_REPOSITORY: %v", err)
	}
	rendered, err = exec.CommandContext(t.Context(), helm, "template", "nodelet", written[0], "--kube-version", "v1.36.3").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := images(rendered), []string{"registry.example:5000/nodelet@" + digest}; !slices.Equal(got, want) {
		t.Errorf("with IMAGE_REPOSITORY the released chart runs %q, want %q", got, want)
	}

	// No image of the release's version: nothing is written.
	if _, err := releaseManifests(t, root, t.TempDir(), layout, "VERSION=v9.9.9"); err == nil || !strings.Contains(err.Error(), "no image nodelet:v9.9.9") {
		t.Errorf("hack/release-manifests.sh without an image of its version: %v, want a failure naming it", err)
	}
}
