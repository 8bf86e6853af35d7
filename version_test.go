package main

// Tests of the version string: plain values.

import (
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestFullVersionIsSemanticWithTheCommitAsBuildMetadata(t *testing.T) {
	cases := map[string]struct {
		commit string
		want   string
	}{
		"a clean build":          {commit: "7f8550a", want: "v0.1.0+7f8550a"},
		"a modified tree":        {commit: "7f8550a-dirty", want: "v0.1.0+7f8550a-dirty"},
		"built without a commit": {want: "v0.1.0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fullVersion("v0.1.0", tc.commit)
			if got != tc.want {
				t.Errorf("fullVersion() = %q, want %q", got, tc.want)
			}
			parsed, err := utilversion.ParseSemantic(got)
			if err != nil {
				t.Fatalf("ParseSemantic(%q): %v", got, err)
			}
			if parsed.BuildMetadata() != tc.commit {
				t.Errorf("build metadata = %q, want %q", parsed.BuildMetadata(), tc.commit)
			}
		})
	}
	if _, err := utilversion.ParseSemantic(baseVersion); err != nil {
		t.Errorf("baseVersion %q is not a semantic version: %v", baseVersion, err)
	}
}
