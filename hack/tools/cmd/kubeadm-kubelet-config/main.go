// Command kubeadm-kubelet-config prints the KubeletConfiguration file
// kubeadm writes to /var/lib/kubelet/config.yaml on a node it sets up
// (kubeadm init or join, default settings), made by kubeadm's own code at
// the version hack/tools pins: the test case of nodelet reading a
// kubeadm-written file (internal/options/testdata/kubeadm-config.yaml).
// On a host running systemd-resolved kubeadm adds
// resolvConf: /run/systemd/resolve/resolv.conf.
//
//	cd hack/tools && go run ./cmd/kubeadm-kubelet-config > ../../internal/options/testdata/kubeadm-config.yaml
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubeadm/app/constants"
	kubeletphase "k8s.io/kubernetes/cmd/kubeadm/app/phases/kubelet"
	configutil "k8s.io/kubernetes/cmd/kubeadm/app/util/config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kubeadm-kubelet-config: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := configutil.DefaultedStaticInitConfiguration()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubelet")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	// kubeadm tells what it writes on standard output.
	stdout := os.Stdout
	os.Stdout = os.Stderr
	defer func() { os.Stdout = stdout }()
	// The node's own runtime endpoint, which kubeadm keeps beside the
	// shared configuration and patches into the file it writes.
	instance := &kubeletconfig.KubeletConfiguration{ContainerRuntimeEndpoint: cfg.NodeRegistration.CRISocket}
	if err := kubeletphase.WriteInstanceConfigToDisk(instance, dir); err != nil {
		return err
	}
	if err := kubeletphase.WriteConfigToDisk(&cfg.ClusterConfiguration, dir, "", io.Discard); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, constants.KubeletConfigurationFileName))
	if err != nil {
		return err
	}
	_, err = stdout.Write(data)
	return err
}
