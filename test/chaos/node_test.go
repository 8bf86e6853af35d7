package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodelet/nodelet/test/chaos/invariants"
	"github.com/nodelet/nodelet/test/e2e"
)

const labelPodUID = "io.kubernetes.pod.uid"

var (
	// A libcni cache entry: <network>-<container ID>-<interface>.
	cniResultName = regexp.MustCompile(`^.+-([0-9a-f]{64})-[^-]+$`)
	// A log link: <pod>_<namespace>_<container>-<container ID>.log.
	logLinkName = regexp.MustCompile(`-([0-9a-f]{64})\.log$`)
)

// gatherNodeState reads what the node holds, from the API server, the
// runtime (directly, not through the proxy) and the node's files.
func gatherNodeState(ctx context.Context, fw *e2e.Framework) (invariants.NodeState, error) {
	env := fw.Env
	state := invariants.NodeState{
		LivePods: map[string]bool{}, Addresses: map[string]string{}, PodMounts: map[string]string{},
		CNIResults: map[string]string{}, LogLinks: map[string]string{},
	}
	pods, err := fw.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + env.NodeName})
	if err != nil {
		return state, fmt.Errorf("listing the node's pods: %w", err)
	}
	for _, pod := range pods.Items {
		state.LivePods[string(pod.UID)] = true
	}
	sandboxes, err := fw.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return state, fmt.Errorf("listing sandboxes: %w", err)
	}
	for _, s := range sandboxes {
		state.Sandboxes = append(state.Sandboxes, invariants.Sandbox{
			ID: s.Id, PodUID: s.Labels[labelPodUID], Ready: s.State == runtimeapi.PodSandboxState_SANDBOX_READY,
		})
	}
	containers, err := fw.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return state, fmt.Errorf("listing containers: %w", err)
	}
	for _, c := range containers {
		state.Containers = append(state.Containers, invariants.Container{ID: c.Id, PodUID: c.Labels[labelPodUID], Name: c.Metadata.GetName()})
	}

	// host-local keeps one file per address, holding the container ID.
	ipamDir := filepath.Join("/var/lib/cni/networks", env.CNINetworkName)
	for _, name := range names(ipamDir) {
		if name == "lock" || strings.HasPrefix(name, "last_reserved_ip") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(ipamDir, name))
		if err == nil {
			state.Addresses[name] = strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0])
		}
	}
	// libcni's cache is shared by every runtime on the machine; the
	// entries of this stack's network are named after it (containerd's
	// loopback entries are not told apart, so not counted).
	for _, name := range names("/var/lib/cni/results") {
		if m := cniResultName.FindStringSubmatch(name); m != nil && strings.HasPrefix(name, env.CNINetworkName+"-") {
			state.CNIResults[name] = m[1]
		}
	}

	mounts, err := e2e.NodeMounts()
	if err != nil {
		return state, err
	}
	podsDir := filepath.Join(env.NodeletRootDir, "pods") + "/"
	for _, m := range mounts {
		mount := m.Point
		switch {
		case strings.HasPrefix(mount, env.StateDir+"/") && strings.Contains(mount, "/netns/"):
			state.NetworkNamespaces = append(state.NetworkNamespaces, mount)
		case strings.HasPrefix(mount, podsDir):
			state.PodMounts[mount] = strings.SplitN(strings.TrimPrefix(mount, podsDir), "/", 2)[0]
		}
	}
	state.PodDirs = names(filepath.Join(env.NodeletRootDir, "pods"))
	state.PodLogDirs = names(env.PodLogDir)
	for _, tier := range []string{"", "burstable", "besteffort"} {
		for _, name := range names(filepath.Join("/sys/fs/cgroup/memory", env.CgroupRoot, "kubepods", tier)) {
			if uid, ok := strings.CutPrefix(name, "pod"); ok {
				state.PodCgroups = append(state.PodCgroups, uid)
			}
		}
	}
	for _, name := range names(env.ContainerLogDir) {
		if m := logLinkName.FindStringSubmatch(name); m != nil {
			state.LogLinks[name] = m[1]
		}
	}
	return state, nil
}

// names lists a folder's entries; a folder that is not there has none.
func names(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
