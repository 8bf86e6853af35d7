package e2e

import (
	"fmt"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// envPrinter is a container that prints its environment, then its two
// arguments, and exits. Its command's $(VAR) references are expanded by
// nodelet; the script has none of its own.
func envPrinter(name string) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           busyboxImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", `env; echo "ARG1=$1"; echo "ARG2=$2"`, "sh", "$(POD_NAME)", "$$(POD_NAME)"},
	}
}

func valueFrom(name string, source corev1.EnvVarSource) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &source}
}

func fieldRefEnv(name, path string) corev1.EnvVar {
	return valueFrom(name, corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}})
}

func resourceEnv(name, container, res, divisor string) corev1.EnvVar {
	return valueFrom(name, corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
		ContainerName: container, Resource: res, Divisor: resource.MustParse(divisor),
	}})
}

func configMapKeyEnv(name, configMap, key string, optional bool) corev1.EnvVar {
	return valueFrom(name, corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key, Optional: ptr.To(optional),
	}})
}

func secretKeyEnv(name, secret, key string) corev1.EnvVar {
	return valueFrom(name, corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}})
}

// The container prints its env; every source's variables are compared
// with what the API server and the node say they should be.
func TestEnvironmentFromEverySourceLandsInTheContainer(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	ctx := t.Context()

	// The Service first: nodelet learns of Services through a watch, and
	// a container created before the event arrives would not have its
	// variables, as under the kubelet.
	db, err := f.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "my-db"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Service my-db: %v", err)
	}
	master, err := f.Client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the kubernetes Service: %v", err)
	}
	node, err := f.Client.CoreV1().Nodes().Get(ctx, f.Env.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading node %s: %v", f.Env.NodeName, err)
	}
	f.createConfigMap(t, ns, "settings", map[string]string{"color": "red", "size": "L"})
	f.createSecret(t, ns, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"},
		Data:       map[string][]byte{"user": []byte("alice"), "pass": []byte("s3cret")},
	})

	app := envPrinter("app")
	app.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	app.EnvFrom = []corev1.EnvFromSource{
		{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
	}
	app.Env = []corev1.EnvVar{
		fieldRefEnv("POD_NAME", "metadata.name"),
		fieldRefEnv("POD_NAMESPACE", "metadata.namespace"),
		fieldRefEnv("POD_UID", "metadata.uid"),
		fieldRefEnv("APP_LABEL", "metadata.labels['app']"),
		fieldRefEnv("NOTE", "metadata.annotations['note']"),
		fieldRefEnv("NODE_NAME", "spec.nodeName"),
		fieldRefEnv("SA_NAME", "spec.serviceAccountName"),
		fieldRefEnv("HOST_IP", "status.hostIP"),
		fieldRefEnv("HOST_IPS", "status.hostIPs"),
		fieldRefEnv("POD_IP", "status.podIP"),
		fieldRefEnv("POD_IPS", "status.podIPs"),
		resourceEnv("CPU_REQUEST_M", "", "requests.cpu", "1m"),
		resourceEnv("CPU_LIMIT_M", "", "limits.cpu", "1m"),
		resourceEnv("MEMORY_LIMIT_MI", "", "limits.memory", "1Mi"),
		// Limits left unset are the node's allocatable.
		resourceEnv("EPHEMERAL_LIMIT_MI", "", "limits.ephemeral-storage", "1Mi"),
		resourceEnv("BARE_MEMORY_LIMIT", "bare", "limits.memory", "1"),
		resourceEnv("BARE_CPU_LIMIT", "bare", "limits.cpu", "1"),
		configMapKeyEnv("COLOR", "settings", "color", false),
		secretKeyEnv("PASSWORD", "creds", "pass"),
		configMapKeyEnv("OPTIONAL_KEY", "settings", "weight", true),
		configMapKeyEnv("OPTIONAL_MAP", "absent", "k", true),
		{Name: "CFG_size", Value: "XL"},
		{Name: "EXPANDED", Value: "$(POD_NAME)/$(CFG_color)/$(user)"},
		{Name: "ESCAPED", Value: "$$(POD_NAME) costs $$5"},
		{Name: "UNKNOWN", Value: "$(NO_SUCH_VARIABLE)"},
		{Name: "FORWARD", Value: "$(DECLARED_LATER)"},
		{Name: "DECLARED_LATER", Value: "later"},
		{Name: "API", Value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
	}
	pod := newPod(ns, "env").withRestartPolicy(corev1.RestartPolicyNever).obj()
	pod.Labels = map[string]string{"app": "shop"}
	pod.Annotations = map[string]string{"note": "hello there"}
	pod.Spec.Containers = []corev1.Container{app, {Name: "bare", Image: busyboxImage, ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"true"}}}
	pod = f.createPod(t, pod)

	noLinks := newPod(ns, "no-links").withRestartPolicy(corev1.RestartPolicyNever).obj()
	noLinks.Spec.EnableServiceLinks = ptr.To(false)
	noLinks.Spec.Containers = []corev1.Container{envPrinter("app")}
	noLinks.Spec.Containers[0].Env = []corev1.EnvVar{fieldRefEnv("POD_NAME", "metadata.name")}
	noLinks = f.createPod(t, noLinks)

	// The IPs as the pod had them while it ran.
	var podIP, hostIP string
	pod = f.waitForPod(t, pod, podStartTimeout, "to be Succeeded", func(p *corev1.Pod) (bool, error) {
		if p.Status.PodIP != "" {
			podIP = p.Status.PodIP
		}
		if p.Status.HostIP != "" {
			hostIP = p.Status.HostIP
		}
		return succeeded(p)
	})
	if podIP == "" || hostIP == "" {
		t.Fatalf("the pod never showed an IP and a host IP to compare with: %s", describePod(pod))
	}
	got := keyValues(f.containerLogLines(t, pod, "app", 0))

	mi := func(q resource.Quantity) string { return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / (1 << 20)))) }
	allocatable := node.Status.Allocatable
	masterIP, masterPort := master.Spec.ClusterIP, fmt.Sprint(master.Spec.Ports[0].Port)
	dbIP := db.Spec.ClusterIP
	want := map[string]string{
		"CFG_color": "red", "CFG_size": "XL", "user": "alice", "pass": "s3cret",
		"POD_NAME": "env", "POD_NAMESPACE": ns, "POD_UID": string(pod.UID),
		"APP_LABEL": "shop", "NOTE": "hello there",
		"NODE_NAME": f.Env.NodeName, "SA_NAME": "default",
		"HOST_IP": hostIP, "HOST_IPS": hostIP,
		"POD_IP": podIP, "POD_IPS": podIP,
		"CPU_REQUEST_M": "250", "CPU_LIMIT_M": "500", "MEMORY_LIMIT_MI": "64",
		"EPHEMERAL_LIMIT_MI": mi(allocatable[corev1.ResourceEphemeralStorage]),
		"BARE_MEMORY_LIMIT":  fmt.Sprint(allocatable.Memory().Value()),
		"BARE_CPU_LIMIT":     fmt.Sprint(allocatable.Cpu().Value()),
		"COLOR":              "red", "PASSWORD": "s3cret",
		"EXPANDED":       "env/red/alice",
		"ESCAPED":        "$(POD_NAME) costs $5",
		"UNKNOWN":        "$(NO_SUCH_VARIABLE)",
		"FORWARD":        "$(DECLARED_LATER)",
		"DECLARED_LATER": "later",
		"API":            masterIP + ":" + masterPort,
		// The command's references are expanded, $$ escapes one.
		"ARG1": "env", "ARG2": "$(POD_NAME)",
		// The service variables, the API server's and the namespace's.
		"KUBERNETES_SERVICE_HOST":       masterIP,
		"KUBERNETES_SERVICE_PORT":       masterPort,
		"KUBERNETES_SERVICE_PORT_HTTPS": masterPort,
		"KUBERNETES_PORT":               "tcp://" + masterIP + ":" + masterPort,
		"MY_DB_SERVICE_HOST":            dbIP,
		"MY_DB_SERVICE_PORT":            "5432",
		"MY_DB_SERVICE_PORT_PG":         "5432",
		"MY_DB_PORT":                    "tcp://" + dbIP + ":5432",
		"MY_DB_PORT_5432_TCP":           "tcp://" + dbIP + ":5432",
		"MY_DB_PORT_5432_TCP_PROTO":     "tcp",
		"MY_DB_PORT_5432_TCP_PORT":      "5432",
		"MY_DB_PORT_5432_TCP_ADDR":      dbIP,
	}
	for name, value := range want {
		if got[name] != value {
			t.Errorf("%s = %q, want %q", name, got[name], value)
		}
	}
	for _, name := range []string{"OPTIONAL_KEY", "OPTIONAL_MAP"} {
		if value, ok := got[name]; ok {
			t.Errorf("%s = %q, want it unset: its optional source is missing", name, value)
		}
	}

	noLinks = f.waitForPod(t, noLinks, podStartTimeout, "to be Succeeded", succeeded)
	gotNoLinks := keyValues(f.containerLogLines(t, noLinks, "app", 0))
	if gotNoLinks["KUBERNETES_SERVICE_HOST"] != masterIP {
		t.Errorf("without service links: KUBERNETES_SERVICE_HOST = %q, want %q: the API server's variables are always there", gotNoLinks["KUBERNETES_SERVICE_HOST"], masterIP)
	}
	for name := range gotNoLinks {
		if len(name) > 6 && name[:6] == "MY_DB_" {
			t.Errorf("without service links: %s is set, want no variables of the namespace's Services", name)
		}
	}
}

// A missing ConfigMap, then a missing key, then a missing Secret: the
// container waits in CreateContainerConfigError with the kubelet's
// messages and starts, in the same pod, once all exist.
func TestMissingConfigMapKeyWaitsThenStartsOnceItExists(t *testing.T) {
	t.Parallel()
	ns := f.NewNamespace(t)
	ctx := t.Context()

	pod := newPod(ns, "waits").withShell(`echo "MODE=$MODE TOKEN=$TOKEN"; exec sleep 3600`).obj()
	pod.Spec.Containers[0].Env = []corev1.EnvVar{
		configMapKeyEnv("MODE", "settings", "mode", false),
		secretKeyEnv("TOKEN", "creds", "token"),
	}
	pod = f.createPod(t, pod)
	f.waitForPod(t, pod, podStartTimeout, "to wait in CreateContainerConfigError for the ConfigMap",
		waitingWith("app", "CreateContainerConfigError", `configmap "settings" not found`))
	f.waitForEvent(t, pod, "Failed", `Error: configmap "settings" not found`, 30*time.Second)

	cm := f.createConfigMap(t, ns, "settings", map[string]string{"other": "x"})
	f.waitForPod(t, pod, time.Minute, "to wait in CreateContainerConfigError for the key",
		waitingWith("app", "CreateContainerConfigError", "couldn't find key mode in ConfigMap "+ns+"/settings"))

	cm.Data["mode"] = "fast"
	if _, err := f.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("adding the key: %v", err)
	}
	f.waitForPod(t, pod, time.Minute, "to wait in CreateContainerConfigError for the Secret",
		waitingWith("app", "CreateContainerConfigError", `secret "creds" not found`))

	f.createSecret(t, ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"token": []byte("t0k")}})
	created := time.Now()
	// Failed starts are retried every 10s.
	running := f.waitForPod(t, pod, time.Minute, "to run once the Secret exists", runningAndReady)
	t.Logf("the container ran %s after the last missing object was made", time.Since(created).Round(time.Millisecond))
	if app := containerStatus(running, "app"); app.RestartCount != 0 {
		t.Errorf("restartCount = %d, want 0: the container never ran before", app.RestartCount)
	}
	f.waitForLogLine(t, running, "app", 30*time.Second, "its env", func(line string) bool { return line == "MODE=fast TOKEN=t0k" })
}
