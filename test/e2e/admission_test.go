package e2e

// Pods the node refuses, as the kubelet refuses them: they end Failed with
// the kubelet's reason and message, get its event, and nothing is made for
// them on the node.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// waitRejected waits for pod to end Failed with reason and the message
// "Pod was rejected: "+message, checks the kubelet's event, and that the
// node made nothing for it: no sandbox, no pod folder, no cgroup.
func (f *Framework) waitRejected(t *testing.T, pod *corev1.Pod, reason, message string) *corev1.Pod {
	t.Helper()
	failed := f.waitForPod(t, pod, podStartTimeout, "to be rejected with "+reason, func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	if failed.Status.Reason != reason || failed.Status.Message != "Pod was rejected: "+message {
		t.Errorf("rejected pod's status: reason %q, message %q; want %q, %q",
			failed.Status.Reason, failed.Status.Message, reason, "Pod was rejected: "+message)
	}
	event := f.waitForEvent(t, pod, reason, message, probeTimeout)
	if event.Type != corev1.EventTypeWarning || event.Message != message {
		t.Errorf("rejection event: %s %q, want Warning %q", event.Type, event.Message, message)
	}
	if sandboxes := f.runtimeSandboxes(t, pod.UID); len(sandboxes) != 0 {
		t.Errorf("the runtime holds sandboxes of the rejected pod: %s", describeSandboxes(sandboxes))
	}
	if _, err := os.Stat(f.podDir(pod)); !os.IsNotExist(err) {
		t.Errorf("the rejected pod has a folder %s (stat: %v)", f.podDir(pod), err)
	}
	if cgroups := f.podCgroups(pod); len(cgroups) != 0 {
		t.Errorf("the rejected pod has cgroups: %s", strings.Join(cgroups, ", "))
	}
	for _, cs := range failed.Status.ContainerStatuses {
		if cs.State.Running != nil || cs.ContainerID != "" {
			t.Errorf("container %s of the rejected pod ran: %s", cs.Name, describeState(cs.State))
		}
	}
	return failed
}

func TestPodForAnotherOSIsRejected(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)

	byField := f.createPod(t, newPod(ns, "windows-field").with(func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	}).obj())
	byLabel := f.createPod(t, newPod(ns, "windows-label").with(func(p *corev1.Pod) {
		p.Labels = map[string]string{corev1.LabelOSStable: "windows"}
	}).obj())
	linux := f.createPod(t, newPod(ns, "linux-field").with(func(p *corev1.Pod) {
		p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		p.Labels = map[string]string{corev1.LabelOSStable: "linux"}
	}).obj())

	f.waitRejected(t, byField, "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")
	f.waitRejected(t, byLabel, "PodOSSelectorNodeLabelDoesNotMatch", "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
	f.waitForPod(t, linux, podStartTimeout, "to be Running and Ready", runningAndReady)
}

func TestUnsafeSysctlIsRejectedAndSafeOneIsSet(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	sysctls := func(names ...string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{}
			for _, n := range names {
				p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
			}
		}
	}

	unsafe := f.createPod(t, newPod(ns, "unsafe").with(sysctls("kernel.shm_rmid_forced", "net.core.somaxconn")).obj())
	// A net sysctl with hostNetwork is refused by the API server's
	// validation already; admission's own refusal is in its unit table.
	// A safe one, written with slashes, reaches the container.
	safe := f.createPod(t, newPod(ns, "safe").with(sysctls("kernel/shm_rmid_forced")).
		withShell("cat /proc/sys/kernel/shm_rmid_forced; exec sleep 3600").obj())

	f.waitRejected(t, unsafe, "SysctlForbidden", `forbidden sysctl: "net.core.somaxconn" not allowlisted`)
	safe = f.waitForPod(t, safe, podStartTimeout, "to be Running and Ready", runningAndReady)
	// The CRI log line of the value the container read.
	f.waitForLog(t, safe, "app", 0, "stdout F 1\n", probeTimeout)
}

// onNode binds a pod to the node directly, past the scheduler, which would
// otherwise keep every pod the node must refuse Pending.
func (f *Framework) onNode(p *corev1.Pod) {
	p.Spec.NodeName = f.Env.NodeName
}

func (f *Framework) node(t *testing.T) *corev1.Node {
	t.Helper()
	node, err := f.Client.CoreV1().Nodes().Get(t.Context(), f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return node
}

// waitRejectedAs is waitRejected for a message known only by its start.
func (f *Framework) waitRejectedAs(t *testing.T, pod *corev1.Pod, reason, messagePrefix string) *corev1.Pod {
	t.Helper()
	failed := f.waitForPod(t, pod, podStartTimeout, "to be rejected with "+reason, func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	if !strings.HasPrefix(failed.Status.Message, "Pod was rejected: "+messagePrefix) {
		t.Errorf("rejected pod's message %q, want it to start with %q", failed.Status.Message, "Pod was rejected: "+messagePrefix)
	}
	f.waitRejected(t, pod, reason, strings.TrimPrefix(failed.Status.Message, "Pod was rejected: "))
	return failed
}

func TestPodAskingMoreCPUThanAllocatableIsRejectedAtOnce(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	allocatable := f.node(t).Status.Allocatable[corev1.ResourceCPU]
	asked := allocatable.MilliValue() + 1000

	start := time.Now()
	pod := f.createPod(t, newPod(ns, "too-much-cpu").with(func(p *corev1.Pod) {
		f.onNode(p)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(asked, resource.DecimalSI)}
	}).obj())
	f.waitForPod(t, pod, 2*time.Second, "to be Failed within 2s", func(p *corev1.Pod) (bool, error) {
		return p.Status.Phase == corev1.PodFailed, nil
	})
	t.Logf("rejected %v after its creation", time.Since(start))
	f.waitRejectedAs(t, pod, "OutOfcpu", fmt.Sprintf("Node didn't have enough resource: cpu, requested: %d, used: ", asked))
}

func TestHostPortTakenAndNodeSelectorMismatchAreRejected(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	holder := f.createPod(t, newPod(ns, "port-holder").with(f.onNode).withHostPort(8080, 31873).obj())
	f.waitForPod(t, holder, podStartTimeout, "to be Running and Ready", runningAndReady)
	// The same port on one address (the holder has every address).
	clash := f.createPod(t, newPod(ns, "port-clash").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 31873, HostIP: "127.0.0.1", Protocol: corev1.ProtocolTCP}}
	}).obj())
	// The same number over UDP is another port.
	udp := f.createPod(t, newPod(ns, "port-udp").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 31873, Protocol: corev1.ProtocolUDP}}
	}).obj())
	elsewhere := f.createPod(t, newPod(ns, "elsewhere").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"nodelet.dev/e2e-no-such-label": "x"}
	}).obj())
	here := f.createPod(t, newPod(ns, "here").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: f.node(t).Labels[corev1.LabelHostname]}
	}).obj())

	f.waitRejected(t, clash, "NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports")
	f.waitRejected(t, elsewhere, "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")
	f.waitForPod(t, udp, podStartTimeout, "to be Running and Ready", runningAndReady)
	f.waitForPod(t, here, podStartTimeout, "to be Running and Ready", runningAndReady)
}

// activeMemoryRequests sums the memory the node's pods that have not ended
// ask for, as admission counts them (their containers', no init peaks:
// none of the stack's pods has init containers asking more).
func (f *Framework) activeMemoryRequests(t *testing.T) int64 {
	t.Helper()
	pods, err := f.Client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + f.Env.NodeName})
	if err != nil {
		t.Fatal(err)
	}
	var used int64
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			used += c.Resources.Requests.Memory().Value()
		}
	}
	return used
}

// Serial: which pods of the burst fit depends on every other pod of the
// node, so none may come or go meanwhile.
func TestBurstOverflowingTheNodeAdmitsTheFirstPodsInCreationOrder(t *testing.T) {
	ns := f.NewNamespace(t)
	allocatable := f.node(t).Status.Allocatable[corev1.ResourceMemory]
	free := allocatable.Value() - f.activeMemoryRequests(t)
	// Two pods of 2/5 of what is free fit, a third does not; a small pod
	// made last fits beside the first two, as refused pods never count.
	size := free * 2 / 5
	var burst []*corev1.Pod
	for i := range 4 {
		burst = append(burst, f.createPod(t, newPod(ns, fmt.Sprintf("burst-%d", i)).with(f.onNode).with(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(size, resource.BinarySI)}
		}).obj()))
	}
	small := f.createPod(t, newPod(ns, "small").with(f.onNode).with(func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}
	}).obj())

	// Creation order is creationTimestamp (whole seconds), then the name:
	// burst-0..3 were made in name order, so it is the order they were made.
	for _, p := range burst[:2] {
		f.waitForPod(t, p, podStartTimeout, "to be Running and Ready", runningAndReady)
	}
	for _, p := range burst[2:] {
		f.waitRejectedAs(t, p, "OutOfmemory", fmt.Sprintf("Node didn't have enough resource: memory, requested: %d, used: ", size))
	}
	f.waitForPod(t, small, podStartTimeout, "to be Running and Ready", runningAndReady)
}

func (f *Framework) setNodeTaints(t *testing.T, change func([]corev1.Taint) []corev1.Taint) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := f.Client.CoreV1().Nodes().Get(context.Background(), f.Env.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Spec.Taints = change(node.Spec.Taints)
		_, err = f.Client.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("changing the node's taints: %v", err)
	}
}

// holdTaintEvictions has the API server refuse the taint eviction
// controller's pod deletions until the test ends.
func (f *Framework) holdTaintEvictions(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	name := "nodelet-e2e-hold-taint-evictions"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "taint-eviction",
				Expression: "request.userInfo.username == 'system:serviceaccount:kube-system:node-controller'",
			}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "taint evictions are held during an e2e test"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	policies := f.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := f.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = policies.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// The API server takes the policy in a moment after it is made: wait
	// until it refuses the controller's deletions (impersonated).
	// A deletion is judged only of a pod that exists: one bound to no
	// real node, which nothing runs.
	probe := f.createPod(t, newPod(ns, "eviction-probe").with(func(p *corev1.Pod) { p.Spec.NodeName = "nodelet-e2e-nowhere" }).obj())
	config, err := clientcmd.BuildConfigFromFlags("", f.Env.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The taint eviction controller runs as the node controller.
	config.Impersonate.UserName = "system:serviceaccount:kube-system:node-controller"
	impersonated, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "the policy to hold taint evictions", func(ctx context.Context) error {
		err := impersonated.CoreV1().Pods(ns).Delete(ctx, probe.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "taint evictions are held") {
			return nil
		}
		return fmt.Errorf("a deletion as the controller answered %w", err)
	})
}
