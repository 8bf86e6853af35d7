// Package vm tests nodelet on the host shape most nodes have: a guest
// under qemu (hack/vm.sh) with systemd as PID 1 and cgroup v2, nodelet
// installed from the release tarball as deploy/host/INSTALL.md says and
// joined by a bootstrap token to the control plane of profile vm
// (hack/local-up.sh vm --no-nodelet), which runs on the host. hack/test.sh's
// vm phase starts both and runs this suite; the gate runs the smoke test
// (TestNodeOnCgroupfsDriver's install, limits and restart), the full tier
// every test.
//
// Real parts throughout: the guest's kernel, systemd, containerd and runc,
// the API server, controller-manager and registry on the host. A guest is
// 20 to 35 times slower than the host at forks and small writes (TCG), so
// the deadlines here are minutes, and each test runs a few pods.
package vm

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// stack is the control plane the guests join: the env file of profile
// vm, which hack/local-up.sh writes.
type stack struct {
	env map[string]string
	// client is the cluster's admin.
	client kubernetes.Interface
	// release is the host install's tarball (hack/release.sh).
	release string
	// repoRoot is the clone's top folder, where hack/vm.sh is.
	repoRoot string
}

var cluster *stack

func (s *stack) get(key string) string {
	v, ok := s.env[key]
	if !ok {
		panic(fmt.Sprintf("%s is not in the stack's env file", key))
	}
	return v
}

func TestMain(m *testing.M) {
	flag.Parse()
	envFile := os.Getenv("NODELET_VM_ENV")
	if envFile == "" {
		fmt.Fprintln(os.Stderr, "NODELET_VM_ENV is not set: run the VM tests with hack/test.sh vm (or make test-vm)")
		os.Exit(1)
	}
	s, err := loadStack(envFile, os.Getenv("NODELET_VM_RELEASE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster = s
	os.Exit(m.Run())
}

func loadStack(envFile, release string) (*stack, error) {
	file, err := os.Open(envFile)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	env := map[string]string{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		if key, value, ok := strings.Cut(scanner.Text(), "="); ok {
			env[key] = value
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", envFile, err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return nil, err
	}
	s := &stack{env: env, repoRoot: root, release: release}
	config, err := clientcmd.BuildConfigFromFlags("", s.get("ADMIN_KUBECONFIG"))
	if err != nil {
		return nil, fmt.Errorf("the stack's admin kubeconfig: %w", err)
	}
	if s.client, err = kubernetes.NewForConfig(config); err != nil {
		return nil, err
	}
	if s.release == "" {
		out, err := exec.Command(filepath.Join(root, "hack", "release.sh"), filepath.Join(root, ".cache", "release")).Output()
		if err != nil {
			return nil, fmt.Errorf("hack/release.sh: %w", err)
		}
		s.release = strings.TrimSpace(string(out))
	}
	return s, nil
}
