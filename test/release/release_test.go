// Package release tests the host install's tarball (hack/release.sh, `make
// release`): it holds what its INSTALL.md lists, the binaries run and take
// the example configuration, and systemd accepts the unit; beside it,
// SHA256SUMS verifies, and each binary's CycloneDX SBOM names the modules
// go.mod pins. No stack and no
// systemd as PID 1 are needed: the unit is checked by reading it and by
// `systemd-analyze verify` on a root folder laid out as INSTALL.md installs
// it, not run.
package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/nodelet/nodelet/internal/testutil/prereq"
)

// buildRelease runs hack/release.sh into a folder of the test and returns
// the tarball's path.
func buildRelease(t *testing.T) (root, tarball string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "hack", "release.sh"), out)
	cmd.Env = append(os.Environ(), "VERSION=") // version.go's, as a release's
	stdout, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("hack/release.sh: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("hack/release.sh: %v", err)
	}
	return root, strings.TrimSpace(string(stdout))
}

// unpack extracts the tarball into dir and returns its regular files by
// their path under its one top folder, with their modes, and that folder.
func unpack(t *testing.T, tarball, dir string) (map[string]os.FileMode, string) {
	t.Helper()
	file, err := os.Open(tarball)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	gz, err := gzip.NewReader(file)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]os.FileMode{}
	var top string
	reader := tar.NewReader(gz)
	for {
		header, err := reader.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		first, rest, _ := strings.Cut(strings.TrimPrefix(header.Name, "./"), "/")
		if top == "" {
			top = first
		}
		if first != top {
			t.Errorf("%s is outside the tarball's one folder %s", header.Name, top)
		}
		if header.Uid != 0 || header.Gid != 0 {
			t.Errorf("%s is owned by %d:%d, want root", header.Name, header.Uid, header.Gid)
		}
		target := filepath.Join(dir, filepath.FromSlash(header.Name))
		switch header.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			files[rest] = header.FileInfo().Mode().Perm()
			data, err := io.ReadAll(reader)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(target, data, header.FileInfo().Mode().Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s is a %c entry, want files and folders only", header.Name, header.Typeflag)
		}
	}
	return files, filepath.Join(dir, top)
}

// contentsRow is a row of INSTALL.md's Contents table: | `file` | `installed as` |.
var contentsRow = regexp.MustCompile("^\\| `([^`]+)` \\| (?:`([^`]+)`|[^|]*) \\|$")

// installedAs reads INSTALL.md's Contents table: each file of the tarball
// and where it is installed ("" for none).
func installedAs(t *testing.T, installMD string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(installMD)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	inContents := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			inContents = line == "## Contents"
			continue
		}
		if m := contentsRow.FindStringSubmatch(line); inContents && m != nil {
			rows[m[1]] = m[2]
		}
	}
	if len(rows) == 0 {
		t.Fatal("INSTALL.md has no Contents table")
	}
	return rows
}

func TestReleaseTarballHoldsWhatINSTALLSays(t *testing.T) {
	repo, tarball := buildRelease(t)
	version := regexp.MustCompile(`(?m)^const baseVersion = "([^"]+)"$`).FindSubmatch(must(os.ReadFile(filepath.Join(repo, "version.go"))))
	if version == nil {
		t.Fatal("no baseVersion in version.go")
	}
	wantName := "nodelet-" + string(version[1]) + "-linux-" + runtime.GOARCH
	if got := filepath.Base(tarball); got != wantName+".tar.gz" {
		t.Errorf("tarball %s, want %s.tar.gz", got, wantName)
	}
	files, top := unpack(t, tarball, t.TempDir())
	if filepath.Base(top) != wantName {
		t.Errorf("the tarball's folder is %s, want %s", filepath.Base(top), wantName)
	}
	install := installedAs(t, filepath.Join(top, "INSTALL.md"))
	if got, want := slices.Sorted(maps.Keys(files)), slices.Sorted(maps.Keys(install)); !slices.Equal(got, want) {
		t.Errorf("the tarball holds %v, INSTALL.md's Contents list %v", got, want)
	}
	for _, bin := range []string{"bin/nodelet", "bin/nodelet-cni"} {
		if files[bin] != 0o755 {
			t.Errorf("%s has mode %v, want 0755", bin, files[bin])
		}
	}

	// The binary takes the example configuration and the environment
	// file's flags, and knows --bootstrap-kubeconfig: it stops at the
	// check that --kubeconfig goes with it, after all of them parsed.
	args := append([]string{"--config=" + filepath.Join(top, "etc/nodelet/config.yaml")}, envArgs(t, filepath.Join(top, "etc/default/nodelet"))...)
	out, err := exec.CommandContext(t.Context(), filepath.Join(top, "bin/nodelet"), append(args, "--bootstrap-kubeconfig=/nonexistent")...).CombinedOutput()
	var exit *exec.ExitError
	if want := "nodelet: --bootstrap-kubeconfig needs --kubeconfig"; !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.HasPrefix(string(out), want) {
		t.Errorf("nodelet %v: %v, %q; want exit code 2 and %q", args, err, out, want)
	}

	checkUnit(t, filepath.Join(top, "systemd/nodelet.service"), install)
	t.Run("SHA256SUMS and SBOMs", func(t *testing.T) {
		checkSupplyChain(t, repo, tarball, string(version[1]))
	})
	t.Run("systemd-analyze verify", func(t *testing.T) {
		prereq.Tools(t, "systemd-analyze")
		verifyUnit(t, top, install)
	})
}

// envArgs is NODELET_ARGS of the environment file, split as systemd
// splits $NODELET_ARGS.
func envArgs(t *testing.T, path string) []string {
	t.Helper()
	for _, line := range strings.Split(string(must(os.ReadFile(path))), "\n") {
		if value, ok := strings.CutPrefix(line, "NODELET_ARGS="); ok {
			return strings.Fields(strings.Trim(value, `"`))
		}
	}
	t.Fatalf("%s sets no NODELET_ARGS", path)
	return nil
}

// unitSettings reads a unit file: section.key to its values, continuation
// lines joined, comments dropped.
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	settings := map[string][]string{}
	section, pending := "", ""
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if pending == "" && (line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";")) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			pending += cont + " "
			continue
		}
		line, pending = pending+line, ""
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.Trim(line, "[]")
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Errorf("%s: %q is not a setting of a section", path, line)
			continue
		}
		settings[section+"."+key] = append(settings[section+"."+key], strings.Join(strings.Fields(value), " "))
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return settings
}

// checkUnit checks the unit's settings a host's nodelet needs, and that
// its paths are where INSTALL.md installs the files.
func checkUnit(t *testing.T, path string, install map[string]string) {
	t.Helper()
	settings := unitSettings(t, path)
	want := map[string]string{
		"Service.ExecStart": install["bin/nodelet"] + " --config=" + install["etc/nodelet/config.yaml"] +
			" --kubeconfig=/etc/nodelet/nodelet.kubeconfig --bootstrap-kubeconfig=/etc/nodelet/bootstrap-kubeconfig $NODELET_ARGS",
		"Service.EnvironmentFile": "-" + install["etc/default/nodelet"],
		"Service.Restart":         "always",
		"Service.KillMode":        "process",
		"Unit.After":              "network-online.target containerd.service",
		"Install.WantedBy":        "multi-user.target",
	}
	for key, value := range want {
		if got := settings[key]; !slices.Equal(got, []string{value}) {
			t.Errorf("%s: %s = %q, want %q", filepath.Base(path), key, got, value)
		}
	}
}

// verifyUnit runs `systemd-analyze verify` on the unit in a root folder
// holding the files where INSTALL.md installs them and the host's system
// units (the targets the unit names); any complaint fails.
func verifyUnit(t *testing.T, top string, install map[string]string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for file, target := range install {
		if !strings.HasPrefix(target, "/") {
			continue
		}
		info, err := os.Stat(filepath.Join(top, file))
		if err != nil {
			// Listed but not shipped: told above.
			continue
		}
		data := must(os.ReadFile(filepath.Join(top, file)))
		dest := filepath.Join(root, target)
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dest, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	units := "/usr/lib/systemd/system"
	if err := os.MkdirAll(filepath.Join(root, "usr/lib/systemd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", units, filepath.Join(root, "usr/lib/systemd")).CombinedOutput(); err != nil {
		t.Fatalf("copying the host's %s: %v\n%s", units, err, out)
	}
	out, err := exec.CommandContext(t.Context(), analyze, "verify", "--root="+root, install["systemd/nodelet.service"]).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", install["systemd/nodelet.service"], err, out)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
