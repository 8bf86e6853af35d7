package vm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// installStep is a shell block of INSTALL.md and where its section says
// it runs: on an admin's machine (here, the host, as the stack's admin)
// or on the host being installed (here, the guest).
type installStep struct {
	section string
	onHost  bool
	script  string
}

var (
	sectionHeading = regexp.MustCompile(`^## (\d+\. .*)$`)
	bootstrapToken = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)
)

// installSteps reads INSTALL.md's numbered sections' ```sh blocks, in
// order. A block outside a numbered section, or in one that does not say
// where it runs, is an error: the test runs every block the reader is
// told to.
func installSteps(path string) ([]installStep, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var (
		steps   []installStep
		section string
		block   *strings.Builder
	)
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := scanner.Text()
		switch {
		case block != nil && line == "```":
			step := installStep{section: section, script: block.String()}
			switch {
			case strings.Contains(section, "(on the host"):
				step.onHost = true
			case strings.Contains(section, "(on an admin's machine"):
			default:
				return nil, fmt.Errorf("%s: a shell block in section %q, which does not say where it runs (on the host, on an admin's machine)", path, section)
			}
			steps = append(steps, step)
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		case line == "```sh":
			block = &strings.Builder{}
		case strings.HasPrefix(line, "## "):
			section = ""
			if m := sectionHeading.FindStringSubmatch(line); m != nil {
				section = m[1]
			}
		}
	}
	return steps, scanner.Err()
}

// hostInstall is what a test gives the install: the node's settings that
// INSTALL.md tells the reader to edit after unpacking.
type hostInstall struct {
	// nodeletArgs is /etc/default/nodelet's NODELET_ARGS.
	nodeletArgs string
	// config is added to /etc/nodelet/config.yaml.
	config string
}

// installNodelet installs nodelet in the guest by following INSTALL.md to
// the letter: every shell block, in order, on the machine its section
// names, with the placeholders filled in (the version and architecture
// of the tarball, the API server's address as the guest reaches it, the
// token step 1 printed, the node's name) and, after the unpacking, the
// edits INSTALL.md asks for. It ends when the last step does: with the
// Node Ready. The cluster-wide objects it made (the token, the bindings,
// the Node) are deleted when the test ends.
func installNodelet(t *testing.T, g *guest, node string, install hostInstall) {
	t.Helper()
	steps, err := installSteps(filepath.Join(cluster.repoRoot, "deploy", "host", "INSTALL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 {
		t.Fatal("INSTALL.md has no shell blocks")
	}
	// What a run cut short left (the stack of hack/test.sh's vm phase is
	// new, `make test-vm` on a stack left up may not be).
	deleteInstallObjects(t, node)
	t.Cleanup(func() { deleteInstallObjects(t, node) })
	release := filepath.Base(cluster.release)
	folder := strings.TrimSuffix(release, ".tar.gz")
	// What a release holds beside the tarball, for INSTALL.md's check
	// of the sums.
	for _, file := range []string{release, "SHA256SUMS", folder + ".nodelet.cdx.json", folder + ".nodelet-cni.cdx.json"} {
		g.copy(t, filepath.Join(filepath.Dir(cluster.release), file), "/root/"+file)
	}
	apiServer := strings.TrimPrefix(cluster.get("APISERVER_GUEST_URL"), "https://")

	var token string
	for i, step := range steps {
		script := strings.NewReplacer(
			"nodelet-VERSION-linux-ARCH", folder,
			"API_SERVER:6443", apiServer,
			"TOKEN_ID.TOKEN_SECRET", token,
			"node/NAME", "node/"+node,
		).Replace(step.script)
		started := time.Now()
		var out string
		if step.onHost {
			out = g.run(t, "cd /root\n"+script)
		} else {
			out = adminShell(t, script)
		}
		t.Logf("INSTALL.md step %d (%s) in %s:\n%s", i+1, step.section, time.Since(started).Round(time.Second), out)
		if token == "" {
			if last := lastLines(out, 1); bootstrapToken.MatchString(last) {
				token = last
			}
		}
		if strings.HasPrefix(step.section, "3. ") {
			editHostFiles(t, g, install)
		}
	}
	if token == "" {
		t.Fatal("no step of INSTALL.md printed a bootstrap token")
	}
	checkJoinedByToken(t, node, strings.SplitN(token, ".", 2)[0])
}

// editHostFiles makes the edits INSTALL.md asks for after unpacking:
// /etc/default/nodelet's flags, and settings in /etc/nodelet/config.yaml.
func editHostFiles(t *testing.T, g *guest, install hostInstall) {
	t.Helper()
	g.run(t, fmt.Sprintf(`sed -i 's|^NODELET_ARGS=.*|NODELET_ARGS="%s"|' /etc/default/nodelet
grep -qx 'NODELET_ARGS="%s"' /etc/default/nodelet
cat >>/etc/nodelet/config.yaml <<'CONFIG'
%s
CONFIG`, install.nodeletArgs, install.nodeletArgs, install.config))
}

// adminShell runs a block as the cluster's admin, with kubectl on PATH.
func adminShell(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(),
		"KUBECONFIG="+cluster.get("ADMIN_KUBECONFIG"),
		"PATH="+filepath.Dir(cluster.get("KUBECTL"))+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as the admin: %v\n$ %s\n%s", err, script, out)
	}
	return strings.TrimSpace(string(out))
}

// checkJoinedByToken checks that the node's client certificate was asked
// for with the bootstrap token and issued.
func checkJoinedByToken(t *testing.T, node, tokenID string) {
	t.Helper()
	csrs, err := cluster.client.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, csr := range csrs.Items {
		if csr.Spec.Username != "system:bootstrap:"+tokenID {
			continue
		}
		if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName || len(csr.Status.Certificate) == 0 {
			t.Errorf("CSR %s of the token: signer %s, issued %v; want %s, issued", csr.Name, csr.Spec.SignerName, len(csr.Status.Certificate) > 0, certificatesv1.KubeAPIServerClientKubeletSignerName)
		}
		return
	}
	t.Errorf("no CSR was made by system:bootstrap:%s for node %s", tokenID, node)
}

// deleteInstallObjects deletes what INSTALL.md made in the cluster, so
// that the next test's install starts from the same cluster: the bindings
// of step 2 (once per cluster), the token, the Node and its Lease.
func deleteInstallObjects(t *testing.T, node string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := cluster.client
	for _, name := range []string{"nodelet-bootstrap", "nodelet-autoapprove-bootstrap", "nodelet-autoapprove-renewal"} {
		ignoreNotFound(t, c.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}))
	}
	secrets, err := c.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(corev1.SecretTypeBootstrapToken)})
	if err != nil {
		t.Errorf("cleaning up the install: listing the bootstrap tokens: %v", err)
	} else {
		for _, s := range secrets.Items {
			ignoreNotFound(t, c.CoreV1().Secrets("kube-system").Delete(ctx, s.Name, metav1.DeleteOptions{}))
		}
	}
	ignoreNotFound(t, c.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{}))
	ignoreNotFound(t, c.CoordinationV1().Leases("kube-node-lease").Delete(ctx, node, metav1.DeleteOptions{}))
}

func ignoreNotFound(t *testing.T, err error) {
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("cleaning up the install: %v", err)
	}
}
