package main

// Tests of the version string: plain values, and hack/tools/go.mod.

import (
	"os"
	"regexp"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/nodelet/nodelet/internal/options"
)

// kubeadmVersionLine is how kubeadm's preflight reads `kubelet --version`.
var kubeadmVersionLine = regexp.MustCompile(`^\s*Kubernetes (v.*)\s*$`)

func TestFullVersionIsKubernetesWithNodeletAsBuildMetadata(t *testing.T) {
	cases := map[string]struct {
		commit string
		want   string
	}{
		"a clean build":          {commit: "7f8550a", want: "v1.36.3+nodelet.v0.1.0.7f8550a"},
		"a modified tree":        {commit: "7f8550a-dirty", want: "v1.36.3+nodelet.v0.1.0.7f8550a-dirty"},
		"built without a commit": {want: "v1.36.3+nodelet.v0.1.0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fullVersion("v1.36.3", "v0.1.0", tc.commit)
			if got != tc.want {
				t.Errorf("fullVersion() = %q, want %q", got, tc.want)
			}
			m := kubeadmVersionLine.FindStringSubmatch("Kubernetes " + got + "\n")
			if m == nil {
				t.Fatalf("kubeadm does not read %q as a kubelet's version", "Kubernetes "+got)
			}
			parsed, err := utilversion.ParseSemantic(m[1])
			if err != nil {
				t.Fatalf("ParseSemantic(%q): %v", m[1], err)
			}
			if c, err := parsed.Compare("v1.36.3"); err != nil || c != 0 {
				t.Errorf("%q compares %d (%v) with v1.36.3, want equal", got, c, err)
			}
		})
	}
	if _, err := utilversion.ParseSemantic(baseVersion); err != nil {
		t.Errorf("baseVersion %q is not a semantic version: %v", baseVersion, err)
	}
}

// The Kubernetes version nodelet reports is the control plane's it is
// built and tested against.
func TestKubernetesVersionIsTheOneHackToolsPins(t *testing.T) {
	goMod, err := os.ReadFile("hack/tools/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(goMod)
	if m == nil {
		t.Fatal("hack/tools/go.mod pins no k8s.io/kubernetes")
	}
	if string(m[1]) != options.KubernetesVersion {
		t.Errorf("options.KubernetesVersion = %s, hack/tools/go.mod pins k8s.io/kubernetes %s", options.KubernetesVersion, m[1])
	}
}
