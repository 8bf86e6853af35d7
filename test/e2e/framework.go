// Package e2e tests nodelet end to end on a real stack: kube-apiserver,
// etcd, kube-controller-manager and kube-scheduler, a local registry and a
// private containerd, as brought up by `hack/local-up.sh e2e --no-nodelet`.
// The suite starts nodelet itself, as a subprocess it can kill and restart,
// and acts on the cluster as an admin user would with kubectl.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"

	configv1alpha1 "github.com/nodelet/nodelet/api/config/v1alpha1"
	"github.com/nodelet/nodelet/internal/testutil/await"
)

// Env is what the stack script writes to <state>/env: where everything of
// the stack lives and what nodelet is started with.
type Env struct {
	StateDir           string
	AdminKubeconfig    string
	NodeKubeconfig     string
	NodeName           string
	CRIEndpoint        string
	NodeletRootDir     string
	PodLogDir          string
	ContainerLogDir    string
	CgroupRoot         string
	CNIConfDir         string
	CNIBinDir          string
	CNINetworkName     string
	CNIBridge          string
	ClusterCIDR        string
	ServiceCIDR        string
	Registry           string
	BusyboxImage       string
	PauseImage         string
	NodeletMetricsAddr string
	NodeletHealthAddr  string
	NodeletLog         string
	NodeletBin         string
	// NodeletArgsFile holds the flags that point nodelet at the stack, one
	// a line, as the stack's own scripts start it.
	NodeletArgsFile       string
	Kubectl               string
	APIServerURL          string
	AuditLog              string
	ContainerdMetricsAddr string
	// NodeletStarted tells that the stack runs a nodelet of its own, which
	// the suite's must not run beside.
	NodeletStarted bool

	// PrivateRegistry requires a login, PrivateRegistryUser with
	// PrivateRegistryPassword; it holds PrivateImage, a busybox.
	PrivateRegistry         string
	PrivateRegistryUser     string
	PrivateRegistryPassword string
	PrivateImage            string
	// ContainerdLog is the runtime's log, which names each image pull.
	ContainerdLog string
	// NetworkMode is nodelet's --network-mode on this stack: runtime or
	// agent.
	NetworkMode string
	// NodeIP is the node's InternalIP, where host ports are reached.
	NodeIP string
	// NodeletPort is the node's daemon port, nodelet's HTTPS API; the
	// tests derive host ports from it, so that stacks side by side never
	// share one.
	NodeletPort string
	// CAFile is the stack's CA (which signs the API server's kubelet
	// client certificate, KubeletClientCert and KubeletClientKey, and
	// approved CSRs).
	CAFile            string
	KubeletClientCert string
	KubeletClientKey  string
	// ServiceIP is the `kubernetes` Service's ClusterIP.
	ServiceIP string
	// ClusterDNS is the kube-dns Service's ClusterIP, nodelet's
	// --cluster-dns; empty when the stack runs no kube-proxy and CoreDNS
	// (ADDONS=false). ClusterDomain is nodelet's --cluster-domain.
	ClusterDNS    string
	ClusterDomain string

	// CgroupDriver is nodelet's --cgroup-driver: cgroupfs (when empty) or
	// systemd. CgroupNamespace is, when nodelet runs in a cgroup
	// namespace (the systemd driver's stack), the host's cgroup that is
	// its root; CgroupRoot is then relative to it. SystemdPID is the
	// host's PID of that stack's systemd, in whose namespaces nodelet
	// runs.
	CgroupDriver    string
	CgroupNamespace string
	SystemdPID      string

	// NodeRestriction tells whether the API server runs the
	// NodeRestriction admission plugin (hack/local-up.sh NODE_RESTRICTION).
	NodeRestriction bool

	// StaticPodDir is nodelet's --pod-manifest-path, StaticPodURL its
	// --manifest-url, which the tests serve.
	StaticPodDir string
	StaticPodURL string
}

// LoadEnv reads a shell-style env file: VAR=value lines, with blank lines,
// comments, an optional leading `export` and optional quotes allowed.
func LoadEnv(path string) (Env, error) {
	vars, err := readEnvFile(path)
	if err != nil {
		return Env{}, err
	}

	var missing []string
	get := func(key string, required bool) string {
		value := vars[key]
		if value == "" && required {
			missing = append(missing, key)
		}
		return value
	}
	env := Env{
		StateDir:              get("STATE_DIR", true),
		AdminKubeconfig:       get("ADMIN_KUBECONFIG", true),
		NodeKubeconfig:        get("NODE_KUBECONFIG", true),
		NodeName:              get("NODE_NAME", true),
		CRIEndpoint:           get("CRI_ENDPOINT", true),
		NodeletRootDir:        get("NODELET_ROOT_DIR", true),
		PodLogDir:             get("POD_LOG_DIR", true),
		ContainerLogDir:       get("CONTAINER_LOG_DIR", true),
		CgroupRoot:            get("CGROUP_ROOT", true),
		CgroupDriver:          get("CGROUP_DRIVER", false),
		CgroupNamespace:       get("CGROUP_NAMESPACE", false),
		SystemdPID:            get("SYSTEMD_PID", false),
		CNIConfDir:            get("CNI_CONF_DIR", true),
		CNIBinDir:             get("CNI_BIN_DIR", true),
		CNINetworkName:        get("CNI_NETWORK_NAME", true),
		CNIBridge:             get("CNI_BRIDGE", true),
		ClusterCIDR:           get("CLUSTER_CIDR", false),
		ServiceCIDR:           get("SERVICE_CIDR", false),
		Registry:              get("REGISTRY", true),
		BusyboxImage:          get("BUSYBOX_IMAGE", true),
		PauseImage:            get("PAUSE_IMAGE", false),
		NodeletMetricsAddr:    get("NODELET_METRICS_ADDR", true),
		NodeletHealthAddr:     get("NODELET_HEALTH_ADDR", true),
		NodeletLog:            get("NODELET_LOG", true),
		NodeletBin:            get("NODELET_BIN", false),
		NodeletArgsFile:       get("NODELET_ARGS_FILE", true),
		StaticPodDir:          get("STATIC_POD_DIR", false),
		StaticPodURL:          get("STATIC_POD_URL", false),
		Kubectl:               get("KUBECTL", false),
		APIServerURL:          get("API_SERVER_URL", false),
		AuditLog:              get("AUDIT_LOG", false),
		ContainerdMetricsAddr: get("CONTAINERD_METRICS_ADDR", false),
		NodeletStarted:        get("NODELET_STARTED", false) == "true",

		PrivateRegistry:         get("PRIVATE_REGISTRY", true),
		PrivateRegistryUser:     get("PRIVATE_REGISTRY_USER", true),
		PrivateRegistryPassword: get("PRIVATE_REGISTRY_PASSWORD", true),
		PrivateImage:            get("PRIVATE_IMAGE", true),
		ContainerdLog:           get("CONTAINERD_LOG", false),
		NetworkMode:             get("NETWORK_MODE", false),
		NodeRestriction:         get("NODE_RESTRICTION", false) != "false",
		NodeIP:                  get("NODE_IP", false),
		NodeletPort:             get("NODELET_PORT", false),
		CAFile:                  get("CA_FILE", false),
		KubeletClientCert:       get("KUBELET_CLIENT_CERT", false),
		KubeletClientKey:        get("KUBELET_CLIENT_KEY", false),
		ServiceIP:               get("SERVICE_IP", false),
		ClusterDNS:              get("CLUSTER_DNS", false),
		ClusterDomain:           get("CLUSTER_DOMAIN", false),
	}
	if env.NetworkMode == "" {
		env.NetworkMode = configv1alpha1.NetworkModeRuntime
	}
	if len(missing) > 0 {
		return Env{}, fmt.Errorf("env file %s lacks %s", path, strings.Join(missing, ", "))
	}
	return env, nil
}

// readEnvFile reads the VAR=value lines of a shell-style env file.
func readEnvFile(path string) (map[string]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening the stack's env file: %w", err)
	}
	defer file.Close()

	vars := map[string]string{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("env file %s: line %q is not VAR=value", path, line)
		}
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		vars[strings.TrimSpace(key)] = value
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("reading env file %s: %w", path, err)
	}
	return vars, nil
}

// agentMode says whether nodelet runs CNI on this stack, behind its shim.
func (e Env) agentMode() bool { return e.NetworkMode == configv1alpha1.NetworkModeAgent }

// Framework is the suite's handle on the stack: the admin's clients, the
// runtime nodelet drives, and nodelet itself.
type Framework struct {
	Env     Env
	Client  kubernetes.Interface
	Runtime cri.RuntimeService
	Nodelet *Nodelet
}

// NewFramework connects to the API server as the admin and to the runtime.
func NewFramework(ctx context.Context, env Env) (*Framework, error) {
	config, err := clientcmd.BuildConfigFromFlags("", env.AdminKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading the admin kubeconfig: %w", err)
	}
	// Many tests wait in parallel; the default 5 QPS would make them
	// queue behind each other's polls.
	config.QPS, config.Burst = 100, 200
	config.UserAgent = rest.DefaultKubernetesUserAgent() + " nodelet-e2e"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("building the admin client: %w", err)
	}
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(env.CRIEndpoint).WithConnectionTimeout(30 * time.Second).Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to the container runtime at %s: %w", env.CRIEndpoint, err)
	}
	return &Framework{Env: env, Client: client, Runtime: runtimeService}, nil
}

// NewNamespace creates a namespace named after the test, waits until the
// controller-manager has given it a `default` ServiceAccount (pods are
// refused before that), and deletes it when the test ends. A failed test
// first logs the namespace's pods and events and nodelet's log about them.
func (f *Framework) NewNamespace(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	ns, err := f.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: namespacePrefix(t.Name())},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the test namespace: %v", err)
	}
	name := ns.Name
	t.Cleanup(func() { f.deleteNamespace(t, name) })
	// Registered after the deletion, so it runs before it: a test that
	// stopped nodelet and failed before starting it again must leave
	// neither its namespace nor the tests after it without a node agent.
	t.Cleanup(func() { f.startNodeletIfStopped(t) })

	err = await.Poll(ctx, time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		_, err := f.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	}))
	if err != nil {
		t.Fatalf("waiting for the default ServiceAccount of namespace %s: %v", name, err)
	}
	return name
}

// startNodeletIfStopped starts nodelet again, with the stack's flags,
// when the test left it stopped, and fails the test for it.
func (f *Framework) startNodeletIfStopped(t *testing.T) {
	if !f.Nodelet.Stopped() {
		return
	}
	t.Errorf("the test left nodelet stopped; starting it again for the tests after it")
	f.Nodelet.SetExtraArgs(nil)
	f.restartNodelet(t)
}

// restartNodelet starts nodelet again and waits until it serves (health
// and API) and its Node is Ready.
func (f *Framework) restartNodelet(t *testing.T) {
	t.Helper()
	if err := f.Nodelet.Start(); err != nil {
		t.Fatalf("starting nodelet again: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := await.Poll(ctx, time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		return f.Nodelet.Healthy(ctx), nil
	})); err != nil {
		t.Fatalf("nodelet's health endpoint did not answer within a minute of its restart: %v", err)
	}
	if _, err := f.waitForNodeReady(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The node may still look Ready from before the restart; its API
	// port tells that this nodelet serves.
	if f.Env.NodeletPort != "" {
		if err := f.waitForNodeAPI(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

// namespacePrefix turns a test name into a namespace's GenerateName:
// lowercase letters, digits and dashes, short enough for the random suffix.
func namespacePrefix(testName string) string {
	name := strings.ToLower(strings.TrimPrefix(testName, "Test"))
	name = regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(name, "-")
	name = strings.Trim(name, "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	return "e2e-" + name + "-"
}

// deleteNamespace deletes the test's namespace and waits until it is gone,
// which needs nodelet to have stopped and removed every pod in it.
func (f *Framework) deleteNamespace(t *testing.T, name string) {
	// The test's context is already cancelled when cleanups run.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	if t.Failed() {
		f.logNamespaceState(ctx, t, name)
	}
	if err := f.Nodelet.UnexpectedExit(); err != nil {
		t.Errorf("nodelet exited on its own during the test: %v", err)
	}

	err := f.Client.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("cleanup: deleting namespace %s: %v", name, err)
		return
	}
	err = await.Poll(ctx, 3*time.Minute, await.Condition(func(ctx context.Context) (bool, error) {
		_, err := f.Client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}))
	if err != nil {
		pods, _ := f.Client.CoreV1().Pods(name).List(context.Background(), metav1.ListOptions{})
		var left []string
		if pods != nil {
			for i := range pods.Items {
				left = append(left, describePod(&pods.Items[i]))
			}
		}
		t.Errorf("cleanup: namespace %s still exists 3m after its deletion; pods left: %v", name, left)
	}
}

// logNamespaceState logs what a failed test left: its pods' status, its
// events and the lines of nodelet's log that name the namespace.
func (f *Framework) logNamespaceState(ctx context.Context, t *testing.T, ns string) {
	pods, err := f.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("listing pods of %s: %v", ns, err)
	} else {
		for i := range pods.Items {
			status, _ := json.MarshalIndent(pods.Items[i].Status, "", "  ")
			t.Logf("pod %s/%s (uid %s, deletionTimestamp %v) status:\n%s",
				ns, pods.Items[i].Name, pods.Items[i].UID, pods.Items[i].DeletionTimestamp, status)
		}
	}
	events, err := f.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("listing events of %s: %v", ns, err)
	} else {
		var lines []string
		for _, e := range events.Items {
			// Events written through events.k8s.io (the scheduler's) have
			// an eventTime and a reporting controller instead.
			when, from := e.LastTimestamp.Time, e.Source.Component
			if when.IsZero() {
				when = e.EventTime.Time
			}
			if from == "" {
				from = e.ReportingController
			}
			lines = append(lines, fmt.Sprintf("%s %s %s/%s %s (%s, x%d): %s",
				when.Format(time.RFC3339), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name,
				e.Reason, from, e.Count, e.Message))
		}
		t.Logf("events in %s:\n%s", ns, strings.Join(lines, "\n"))
	}
	t.Logf("nodelet log lines naming %s (last 150):\n%s", ns, f.Nodelet.LogLines(ns, 150))
	t.Logf("nodelet log (last 60 lines):\n%s", f.Nodelet.LogLines("", 60))
}

// podLogDir is the folder of a pod's container logs.
func (f *Framework) podLogDir(pod *corev1.Pod) string {
	return filepath.Join(f.Env.PodLogDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}

// podDir is nodelet's folder for a pod.
func (f *Framework) podDir(pod *corev1.Pod) string {
	return filepath.Join(f.Env.NodeletRootDir, "pods", string(pod.UID))
}

// podCgroups are the pod's cgroup folders, in whichever QoS tier (or,
// made by an older nodelet, right under the root) they are: one per
// hierarchy under cgroup v1, the one folder under v2.
func (f *Framework) podCgroups(pod *corev1.Pod) []string {
	name := "pod" + string(pod.UID)
	var dirs []string
	for _, parent := range []string{"", "kubepods", "kubepods/burstable", "kubepods/besteffort"} {
		if parent == "" && f.systemdDriver() {
			continue
		}
		v1, _ := filepath.Glob(f.hostCgroupDir("*", filepath.Join(parent, name)))
		dirs = append(dirs, v1...)
		v2 := f.hostCgroupDir("", filepath.Join(parent, name))
		if _, err := os.Stat(v2); err == nil {
			dirs = append(dirs, v2)
		}
	}
	return dirs
}

// createPod creates a pod as the admin and returns it as created, with the
// resourceVersion from which waitForPod sees all its states.
func (f *Framework) createPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	created, err := f.Client.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	return created
}

// deletePod deletes a pod (this very UID) with the given grace period; nil
// means the pod's own.
func (f *Framework) deletePod(t *testing.T, pod *corev1.Pod, gracePeriodSeconds *int64) {
	t.Helper()
	err := f.Client.CoreV1().Pods(pod.Namespace).Delete(t.Context(), pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: gracePeriodSeconds,
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil {
		t.Fatalf("deleting pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
}

// runningAndReady is a waitForPod condition.
func runningAndReady(pod *corev1.Pod) (bool, error) {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("the pod ended in phase %s", pod.Status.Phase)
	}
	return pod.Status.Phase == corev1.PodRunning && podReady(pod), nil
}
