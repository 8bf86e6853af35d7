package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// chartFolders are the chart's host folders in the test's values
// (companionValues), under r.dir.
var chartFolders = []string{"containerd", "run", "cni", "nodelet", "pod-logs", "containers"}

// chartMounts are the lines of the host's mount table (the host node's
// mount namespace's) whose mount point is under a chart's host folder.
func chartMounts(t *testing.T, host hostEnv, r companionRelease) []string {
	t.Helper()
	var mountinfo []byte
	var err error
	if host.MountNS != "" {
		mountinfo, err = exec.CommandContext(t.Context(), "nsenter", "--mount="+host.MountNS, "--", "cat", "/proc/self/mountinfo").Output()
	} else {
		mountinfo, err = os.ReadFile("/proc/self/mountinfo")
	}
	if err != nil {
		t.Fatalf("reading the host's mount table: %v", err)
	}
	var under []string
	for _, line := range strings.Split(string(mountinfo), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		point := unescapeMountPath(fields[4])
		for _, dir := range chartFolders {
			if d := filepath.Join(r.dir, dir); point == d || strings.HasPrefix(point, d+"/") {
				under = append(under, line)
			}
		}
	}
	return under
}

// checkHostCleaned: helm uninstall returns once its hook's pod on the
// host has unmounted everything under the chart's host folders (the
// pods' network namespaces, volumes, the containers' root file systems)
// and removed them, as the host's mount table shows, removed the iptables
// rules of the chart's network, deleted the pods' bridge, and its pod is
// gone.
func checkHostCleaned(t *testing.T, host hostEnv, r companionRelease) {
	for _, dir := range chartFolders {
		if _, err := os.Lstat(filepath.Join(r.dir, dir)); !os.IsNotExist(err) {
			t.Errorf("the chart's host folder %s after helm uninstall: %v, want it gone", filepath.Join(r.dir, dir), err)
		}
	}
	for _, line := range chartMounts(t, host, r) {
		t.Errorf("mounted after helm uninstall, under the chart's host folders: %s", line)
	}
	for _, rule := range networkRules(t, r.network()) {
		t.Errorf("an iptables rule of the network %s is left after helm uninstall: %s", r.network(), rule)
	}
	if iface, err := net.InterfaceByName(r.bridge); err == nil {
		t.Errorf("the pods' bridge %s (index %d) is left after helm uninstall", r.bridge, iface.Index)
	}
	pods, err := f.Client.CoreV1().Pods(r.namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "nodelet.dev/clean-host=true"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("the hook's pod %s on %s is left, %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
}

// onCompanion are the toleration of the companion's taint and the
// affinity to the companion node that a pod needs to run there.
func onCompanion(node string) ([]corev1.Toleration, *corev1.Affinity) {
	return []corev1.Toleration{{Key: "nodelet.dev/companion", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}},
		}}
}

// runDaemonSetOnCompanion starts a DaemonSet whose one pod runs on the
// companion, and waits for it to be Running: a drain leaves it.
func runDaemonSetOnCompanion(t *testing.T, ns, node string) {
	t.Helper()
	labels := map[string]string{"app": "left-by-the-drain"}
	pod := newPod(ns, "left-by-the-drain").obj()
	pod.Spec.Tolerations, pod.Spec.Affinity = onCompanion(node)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "left-by-the-drain", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
	if _, err := f.Client.AppsV1().DaemonSets(ns).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 2*time.Minute, "the DaemonSet's pod to be Running on "+node, func(ctx context.Context) error {
		pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=left-by-the-drain"})
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning {
				return nil
			}
		}
		return fmt.Errorf("%d pods, none Running on %s", len(pods.Items), node)
	})
}

// networkRules are the lines of the host's iptables-save that name the
// CNI network (the bridge and portmap plugins' comments).
func networkRules(t *testing.T, network string) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	var rules []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, fmt.Sprintf(`name: \"%s\" id: `, network)) {
			rules = append(rules, line)
		}
	}
	return rules
}

// watchPod watches pod from now on; the function it returns gives every
// version of it seen until it was deleted (waiting up to 3 minutes for
// that).
func watchPod(t *testing.T, pod *corev1.Pod) func() []*corev1.Pod {
	t.Helper()
	w, err := f.Client.CoreV1().Pods(pod.Namespace).Watch(t.Context(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + pod.Name,
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []*corev1.Pod
	done := make(chan struct{})
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			if p, ok := event.Object.(*corev1.Pod); ok && p.UID == pod.UID {
				seen = append(seen, p)
				if event.Type == watch.Deleted {
					return
				}
			}
		}
	}()
	return func() []*corev1.Pod {
		select {
		case <-done:
		case <-time.After(3 * time.Minute):
			t.Errorf("pod %s/%s not seen deleted in 3m", pod.Namespace, pod.Name)
		}
		w.Stop()
		<-done
		return seen
	}
}

// checkDrained: the pod on the companion was evicted through the Eviction
// API (its DisruptionTarget condition), deleted with its own grace period,
// and its preStop hook ran (its mark on the host), as nodelet stops a
// deleted pod.
func checkDrained(t *testing.T, seen []*corev1.Pod, hostFiles string) {
	var evicted, graceful bool
	for _, p := range seen {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" {
				evicted = true
			}
		}
		if p.DeletionTimestamp != nil && ptr.Deref(p.DeletionGracePeriodSeconds, 0) == ptr.Deref(p.Spec.TerminationGracePeriodSeconds, -1) {
			graceful = true
		}
	}
	if !evicted {
		t.Errorf("the companion's pod: no DisruptionTarget condition of reason EvictionByEvictionAPI in the %d versions seen, want it evicted by the drain", len(seen))
	}
	if !graceful {
		t.Errorf("the companion's pod: never seen deleted with its grace period in the %d versions seen", len(seen))
	}
	data, err := os.ReadFile(filepath.Join(hostFiles, "made", "pre-stop"))
	if err != nil || string(data) != "stopped gracefully\n" {
		t.Errorf("the mark of the companion's pod's preStop hook on the host: %q, %v, want it written", data, err)
	}
}

// checkCompanionRemoved: helm uninstall returns once its post-delete hook
// has run: the companion Node is gone, and so are both hooks' Jobs,
// ServiceAccounts and roles, deleted once they succeeded.
func checkCompanionRemoved(t *testing.T, r companionRelease) {
	ctx := t.Context()
	if _, err := f.Client.CoreV1().Nodes().Get(ctx, r.node, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the companion Node %s after helm uninstall: %v, want it gone", r.node, err)
	}
	hook := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + r.name + ",app.kubernetes.io/component in (drain-companions,remove-companions)"}
	await.Eventually(t, time.Minute, "the hooks' objects to be gone", func(ctx context.Context) error {
		left := map[string]int{}
		jobs, err := f.Client.BatchV1().Jobs(r.namespace).List(ctx, hook)
		if err != nil {
			return err
		}
		left["Jobs"] = len(jobs.Items)
		accounts, err := f.Client.CoreV1().ServiceAccounts(r.namespace).List(ctx, hook)
		if err != nil {
			return err
		}
		left["ServiceAccounts"] = len(accounts.Items)
		clusterRoles, err := f.Client.RbacV1().ClusterRoles().List(ctx, hook)
		if err != nil {
			return err
		}
		left["ClusterRoles"] = len(clusterRoles.Items)
		clusterBindings, err := f.Client.RbacV1().ClusterRoleBindings().List(ctx, hook)
		if err != nil {
			return err
		}
		left["ClusterRoleBindings"] = len(clusterBindings.Items)
		roles, err := f.Client.RbacV1().Roles(r.namespace).List(ctx, hook)
		if err != nil {
			return err
		}
		left["Roles"] = len(roles.Items)
		bindings, err := f.Client.RbacV1().RoleBindings(r.namespace).List(ctx, hook)
		if err != nil {
			return err
		}
		left["RoleBindings"] = len(bindings.Items)
		for kind, n := range left {
			if n > 0 {
				return fmt.Errorf("%d %s left: %v", n, kind, left)
			}
		}
		return nil
	})
}

// companionProcess is one process of the companion, told apart from a
// later process of the same PID by its start time.
type companionProcess struct {
	pid, startTime, comm string
}

// companionProcesses are the processes in the cgroups of the DaemonSets'
// pods on the host (the pids hierarchy, where the host kubelet made them):
// nodelet's, and the runtime's with its shims and the companion's pods'
// containers inside.
func companionProcesses(t *testing.T, host hostEnv, pods ...*corev1.Pod) []companionProcess {
	t.Helper()
	var found []companionProcess
	for _, pod := range pods {
		dir := podCgroupOnHost(t, host, pod)
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, pid := range strings.Fields(string(data)) {
				if p, ok := readProcess(pid); ok {
					found = append(found, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("the processes of pod %s in %s: %v", pod.Name, dir, err)
		}
	}
	return found
}

// podCgroupOnHost is a pod's cgroup in the host's pids hierarchy, under
// its QoS tier as the host kubelet made it.
func podCgroupOnHost(t *testing.T, host hostEnv, pod *corev1.Pod) string {
	t.Helper()
	for _, tier := range []string{"", "burstable", "besteffort"} {
		dir := filepath.Join("/sys/fs/cgroup/pids", host.CgroupRoot, "kubepods", tier, "pod"+string(pod.UID))
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
	}
	t.Fatalf("no cgroup of pod %s on the host, under %s", pod.Name, filepath.Join("/sys/fs/cgroup/pids", host.CgroupRoot, "kubepods"))
	return ""
}

// readProcess reads a process's start time and name from /proc; false
// when it has gone.
func readProcess(pid string) (companionProcess, bool) {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return companionProcess{}, false
	}
	// The name is in parentheses and may hold spaces: the fields after it
	// are counted from the last ')'; the start time is the 22nd field.
	open, end := strings.IndexByte(string(stat), '('), strings.LastIndexByte(string(stat), ')')
	if open < 0 || end < open {
		return companionProcess{}, false
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 20 {
		return companionProcess{}, false
	}
	return companionProcess{pid: pid, startTime: fields[19], comm: string(stat[open+1 : end])}, true
}

// checkNoProcessLeft: none of the companion's processes seen before helm
// uninstall still runs after it.
func checkNoProcessLeft(t *testing.T, before []companionProcess) {
	await.Eventually(t, time.Minute, "the companion's processes to be gone", func(context.Context) error {
		var left []string
		for _, p := range before {
			if now, ok := readProcess(p.pid); ok && now.startTime == p.startTime {
				left = append(left, p.pid+" "+p.comm)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("%d of the %d processes still run: %v", len(left), len(before), left)
		}
		return nil
	})
}
