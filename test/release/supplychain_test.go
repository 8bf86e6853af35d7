package release

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sbomModules are modules each binary links, in its SBOM at go.mod's
// version.
var sbomModules = map[string][]string{
	"nodelet":     {"k8s.io/cri-api", "sigs.k8s.io/controller-runtime", "k8s.io/client-go", "github.com/containernetworking/cni"},
	"nodelet-cni": {"github.com/containernetworking/cni"},
}

// cycloneDX is the part of a CycloneDX JSON document the test reads.
type cycloneDX struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Component sbomComponent `json:"component"`
	} `json:"metadata"`
	Components []sbomComponent `json:"components"`
}

type sbomComponent struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
}

// checkSupplyChain checks what hack/release.sh writes beside the tarball:
// an SBOM of each binary, and SHA256SUMS over them and the tarball, which
// `sha256sum -c` verifies and which fails once a file changes.
func checkSupplyChain(t *testing.T, repo, tarball, version string) {
	dir := filepath.Dir(tarball)
	name := strings.TrimSuffix(filepath.Base(tarball), ".tar.gz")
	var want []string
	for bin := range sbomModules {
		want = append(want, name+"."+bin+".cdx.json")
	}
	want = append(want, filepath.Base(tarball))
	slices.Sort(want)

	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(must(os.ReadFile(filepath.Join(dir, "SHA256SUMS"))))), "\n") {
		sum, file, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Errorf("SHA256SUMS line %q is not `<sha256>  <file>`", line)
			continue
		}
		sums[file] = sum
	}
	if got := slices.Sorted(maps.Keys(sums)); !slices.Equal(got, want) {
		t.Errorf("SHA256SUMS lists %v, want %v", got, want)
	}
	if out, err := sha256sumCheck(t, dir); err != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}
	// A changed SBOM fails the check: it compares the files, not names.
	tampered := t.TempDir()
	for file := range sums {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", file, err)
		}
		if strings.HasSuffix(file, ".cdx.json") {
			data = append(data, '\n')
		}
		if err := os.WriteFile(filepath.Join(tampered, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tampered, "SHA256SUMS"), must(os.ReadFile(filepath.Join(dir, "SHA256SUMS"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := sha256sumCheck(t, tampered); err == nil {
		t.Errorf("sha256sum -c passed with changed SBOMs:\n%s", out)
	}

	for bin, modules := range sbomModules {
		path := filepath.Join(dir, name+"."+bin+".cdx.json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("no SBOM of %s: %v", bin, err)
			continue
		}
		var bom cycloneDX
		if err := json.Unmarshal(data, &bom); err != nil {
			t.Errorf("%s is not JSON: %v", filepath.Base(path), err)
			continue
		}
		if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
			t.Errorf("%s: bomFormat %q, specVersion %q; want CycloneDX and a version", filepath.Base(path), bom.BOMFormat, bom.SpecVersion)
		}
		if main := bom.Metadata.Component; main.Name != "github.com/nodelet/nodelet" || main.Version != version {
			t.Errorf("%s describes %s@%s, want github.com/nodelet/nodelet@%s", filepath.Base(path), main.Name, main.Version, version)
		}
		linked := map[string]sbomComponent{}
		for _, c := range bom.Components {
			linked[c.Name] = c
		}
		for _, module := range modules {
			wantVersion := goModVersion(t, repo, module)
			c, ok := linked[module]
			switch {
			case !ok:
				t.Errorf("%s does not list %s", filepath.Base(path), module)
			case c.Version != wantVersion || !strings.HasPrefix(c.PURL, "pkg:golang/"+module+"@"+wantVersion):
				t.Errorf("%s lists %s at %s (purl %s), go.mod has %s", filepath.Base(path), module, c.Version, c.PURL, wantVersion)
			}
		}
	}
}

func sha256sumCheck(t *testing.T, dir string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "sha256sum", "-c", "SHA256SUMS")
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// goModVersion is the version of module that nodelet's go.mod selects.
func goModVersion(t *testing.T, repo, module string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Version}}", module)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	return strings.TrimSpace(string(out))
}
