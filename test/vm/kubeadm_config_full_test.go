//go:build full

package vm

import (
	"fmt"
	"strings"
)

// The configuration kubeadm init and join are given in TestKubeadm, and
// the patches init applies to the control plane's manifests.

func kubeadmInitConfig(registry string) string {
	cp := kubeadmControlPlane
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
bootstrapTokens:
- token: %[1]s
localAPIEndpoint:
  advertiseAddress: %[2]s
  bindPort: 6443
nodeRegistration:
  name: %[3]s
  criSocket: unix:///run/containerd/containerd.sock
  kubeletExtraArgs:
  - name: node-ip
    value: %[2]s
%[4]spatches:
  directory: %[8]s
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
imageRepository: %[5]s
controlPlaneEndpoint: %[2]s:6443
networking:
  podSubnet: %[6]s
  serviceSubnet: %[7]s
dns:
  imageTag: "1.14.7"
# One control plane node: no leader to elect. Under TCG the API server
# answers a lease renewal too late now and then, and a component that
# loses its lease exits, holding CSR approval and scheduling back.
controllerManager:
  extraArgs:
  - name: leader-elect
    value: "false"
scheduler:
  extraArgs:
  - name: leader-elect
    value: "false"
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
`, kubeadmToken, cp.address, cp.name, kubeadmTimeouts, registry, kubeadmPodSubnet, kubeadmServiceSubnet, kubeadmPatchDir)
}

// kubeadmPatchDir holds the patches kubeadm applies to the control
// plane's manifests (kubeadmProbePatches).
const kubeadmPatchDir = "/root/kubeadm/patches"

// kubeadmProbePatches is a shell snippet writing kubeadm's patches that
// loosen the control plane's liveness probes: under TCG, while the nodes
// pull and unpack the add-ons' images, etcd's writes queue for minutes and
// the API server answers /livez past kubeadm's 8 failures in 80 s, so the
// node agent (nodelet or the kubelet alike) restarts it, and the quick
// start's kubectl meets a closed port. Slow hardware is tuned so.
func kubeadmProbePatches() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mkdir -p %s\n", kubeadmPatchDir)
	for _, component := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		fmt.Fprintf(&b, "cat >%s/%s+strategic.yaml <<'EOF'\n", kubeadmPatchDir, component)
		fmt.Fprintf(&b, "spec:\n  containers:\n  - name: %s\n    livenessProbe:\n      failureThreshold: 60\n      timeoutSeconds: 30\n", component)
		b.WriteString("EOF\n")
	}
	return b.String()
}

func kubeadmJoinConfig(caCertHash string) string {
	w := kubeadmWorker
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: %[1]s:6443
    token: %[2]s
    caCertHashes:
    - %[3]s
nodeRegistration:
  name: %[4]s
  criSocket: unix:///run/containerd/containerd.sock
  kubeletExtraArgs:
  - name: node-ip
    value: %[5]s
%[6]s`, kubeadmControlPlane.address, kubeadmToken, caCertHash, w.name, w.address, kubeadmTimeouts)
}
