package runtime

// Pure tests of a container's environment: a pod, the objects the caller
// read and the pod's IPs in, variables (or the kubelet's error) out; and
// the event for skipped envFrom keys, through generateContainerConfig with
// a fake recorder.

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	critest "k8s.io/cri-api/pkg/apis/testing"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func envTestPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web", Namespace: "shop", UID: "uid-1",
			Labels:      map[string]string{"app": "web"},
			Annotations: map[string]string{"team": "blue"},
		},
		Spec: corev1.PodSpec{
			NodeName:           "node-1",
			ServiceAccountName: "builder",
			Containers: []corev1.Container{{
				Name: "app",
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
}

func envTestObjects() kubecontainer.EnvObjects {
	return kubecontainer.EnvObjects{
		ConfigMaps: map[string]*corev1.ConfigMap{
			"settings": {Data: map[string]string{"color": "red", "size": "L", "1st": "gold"}},
			"more":     {Data: map[string]string{"color": "blue", "shape": "round"}},
		},
		Secrets: map[string]*corev1.Secret{
			"creds": {Data: map[string][]byte{"user": []byte("alice"), "pass": []byte("s3cret")}},
		},
	}
}

func fromEnv(name string, source corev1.EnvVarSource) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &source}
}

func configMapKey(name, key string, optional bool) corev1.EnvVarSource {
	ref := &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	if optional {
		ref.Optional = ptr.To(true)
	}
	return corev1.EnvVarSource{ConfigMapKeyRef: ref}
}

func secretKey(name, key string, optional bool) corev1.EnvVarSource {
	ref := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	if optional {
		ref.Optional = ptr.To(true)
	}
	return corev1.EnvVarSource{SecretKeyRef: ref}
}

func fieldRef(path string) corev1.EnvVarSource {
	return corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
}

func TestContainerEnv(t *testing.T) {
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
	}
	cases := map[string]struct {
		env         []corev1.EnvVar
		envFrom     []corev1.EnvFromSource
		podIPs      []string
		hostIPs     []string
		serviceEnv  map[string]string
		objects     *kubecontainer.EnvObjects
		noNode      bool
		want        []envVar
		wantSkipped []skippedEnvFromKeys
		wantErr     string
		wantIsNotFd bool
	}{
		"literal values, in order, the last of a name winning in its first place": {
			env:  []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "A", Value: "3"}},
			want: []envVar{{"A", "3"}, {"B", "2"}},
		},
		"$(VAR) sees what is declared before it, not after; $$ escapes; unknown names stay": {
			env: []corev1.EnvVar{
				{Name: "HOST", Value: "db"},
				{Name: "URL", Value: "postgres://$(HOST):$(PORT)/$$(HOST)"},
				{Name: "PORT", Value: "5432"},
			},
			want: []envVar{{"HOST", "db"}, {"URL", "postgres://db:$(PORT)/$(HOST)"}, {"PORT", "5432"}},
		},
		"every pod field, the pod's IPs and the node's": {
			env: []corev1.EnvVar{
				fromEnv("NAME", fieldRef("metadata.name")),
				fromEnv("NAMESPACE", fieldRef("metadata.namespace")),
				fromEnv("UID", fieldRef("metadata.uid")),
				fromEnv("APP", fieldRef("metadata.labels['app']")),
				fromEnv("TEAM", fieldRef("metadata.annotations['team']")),
				fromEnv("NODE", fieldRef("spec.nodeName")),
				fromEnv("SA", fieldRef("spec.serviceAccountName")),
				fromEnv("HOST_IP", fieldRef("status.hostIP")),
				fromEnv("HOST_IPS", fieldRef("status.hostIPs")),
				fromEnv("POD_IP", fieldRef("status.podIP")),
				fromEnv("POD_IPS", fieldRef("status.podIPs")),
			},
			podIPs:  []string{"10.244.0.7", "fd00::7"},
			hostIPs: []string{"192.168.1.10", "fd00::10"},
			want: []envVar{
				{"NAME", "web"}, {"NAMESPACE", "shop"}, {"UID", "uid-1"}, {"APP", "web"}, {"TEAM", "blue"},
				{"NODE", "node-1"}, {"SA", "builder"},
				{"HOST_IP", "192.168.1.10"}, {"HOST_IPS", "192.168.1.10,fd00::10"},
				{"POD_IP", "10.244.0.7"}, {"POD_IPS", "10.244.0.7,fd00::7"},
			},
		},
		"the pod's IP is empty while unknown": {
			env:     []corev1.EnvVar{fromEnv("POD_IP", fieldRef("status.podIP")), fromEnv("POD_IPS", fieldRef("status.podIPs"))},
			hostIPs: []string{"192.168.1.10"},
			want:    []envVar{{"POD_IP", ""}, {"POD_IPS", ""}},
		},
		"a node without an IP cannot give its IP": {
			env:     []corev1.EnvVar{fromEnv("HOST_IP", fieldRef("status.hostIP"))},
			wantErr: "host IP unknown; known addresses: []",
		},
		"a field reference can be expanded by a later value": {
			env: []corev1.EnvVar{
				fromEnv("POD_IP", fieldRef("status.podIP")),
				{Name: "ADDR", Value: "$(POD_IP):8080"},
			},
			podIPs: []string{"10.244.0.7"},
			want:   []envVar{{"POD_IP", "10.244.0.7"}, {"ADDR", "10.244.0.7:8080"}},
		},
		"resources, with the node's allocatable for an unset limit": {
			env: []corev1.EnvVar{
				fromEnv("MEM_MI", corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}),
				fromEnv("CPU", corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}),
				fromEnv("CPU_REQ", corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu"}}),
			},
			want: []envVar{{"MEM_MI", "64"}, {"CPU", "2"}, {"CPU_REQ", "0"}},
		},
		"a resource limit without the node": {
			env:     []corev1.EnvVar{fromEnv("CPU", corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}})},
			noNode:  true,
			wantErr: "failed to find node object, expected a node",
		},
		"ConfigMap and Secret keys": {
			env: []corev1.EnvVar{
				fromEnv("COLOR", configMapKey("settings", "color", false)),
				fromEnv("USER", secretKey("creds", "user", false)),
			},
			want: []envVar{{"COLOR", "red"}, {"USER", "alice"}},
		},
		"a missing ConfigMap": {
			env:         []corev1.EnvVar{fromEnv("X", configMapKey("absent", "k", false))},
			wantErr:     `configmap "absent" not found`,
			wantIsNotFd: true,
		},
		"a missing ConfigMap key": {
			env:     []corev1.EnvVar{fromEnv("X", configMapKey("settings", "weight", false))},
			wantErr: "couldn't find key weight in ConfigMap shop/settings",
		},
		"a missing Secret": {
			env:         []corev1.EnvVar{fromEnv("X", secretKey("absent", "k", false))},
			wantErr:     `secret "absent" not found`,
			wantIsNotFd: true,
		},
		"a missing Secret key": {
			env:     []corev1.EnvVar{fromEnv("X", secretKey("creds", "token", false))},
			wantErr: "couldn't find key token in Secret shop/creds",
		},
		"optional keys and objects that are missing set nothing": {
			env: []corev1.EnvVar{
				fromEnv("A", configMapKey("absent", "k", true)),
				fromEnv("B", configMapKey("settings", "weight", true)),
				fromEnv("C", secretKey("absent", "k", true)),
				fromEnv("D", secretKey("creds", "token", true)),
				{Name: "E", Value: "[$(A)]"},
			},
			want: []envVar{{"E", "[$(A)]"}},
		},
		"an object that could not be read fails even when optional": {
			env: []corev1.EnvVar{fromEnv("A", configMapKey("settings", "color", true))},
			objects: &kubecontainer.EnvObjects{Errors: map[string]error{
				kubecontainer.EnvObjectKey("configmap", "settings"): errors.New(`configmaps "settings" is forbidden`),
			}},
			wantErr: `configmaps "settings" is forbidden`,
		},
		"envFrom with prefixes, a later source winning, env winning over both": {
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "more"}}},
				{Prefix: "DB_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
			},
			env: []corev1.EnvVar{{Name: "size", Value: "XL, not $(size)"}},
			want: []envVar{
				{"1st", "gold"}, {"color", "blue"}, {"size", "XL, not L"}, {"shape", "round"},
				{"DB_pass", "s3cret"}, {"DB_user", "alice"},
			},
		},
		"an optional envFrom source that is missing gives nothing": {
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}},
			},
			want: nil,
		},
		"a required envFrom source that is missing": {
			envFrom: []corev1.EnvFromSource{
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}},
			},
			wantErr:     `secret "absent" not found`,
			wantIsNotFd: true,
		},
		"envFrom keys that are no valid names are skipped and reported": {
			envFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "odd"}}},
			},
			objects: &kubecontainer.EnvObjects{ConfigMaps: map[string]*corev1.ConfigMap{
				"odd": {Data: map[string]string{"ok": "1", "a=b": "2", "tab\there": "3"}},
			}},
			want:        []envVar{{"ok", "1"}},
			wantSkipped: []skippedEnvFromKeys{{Kind: "configMap", Name: "odd", Keys: []string{"a=b", "tab\there"}}},
		},
		"service variables come last, are expandable, and yield to the container's own": {
			env: []corev1.EnvVar{
				{Name: "API", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
				{Name: "KUBERNETES_SERVICE_PORT", Value: "8443"},
			},
			serviceEnv: map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"},
			want: []envVar{
				{"API", "https://10.96.0.1:443"},
				{"KUBERNETES_SERVICE_PORT", "8443"},
				{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := envTestPod()
			pod.Spec.Containers[0].Env = tc.env
			pod.Spec.Containers[0].EnvFrom = tc.envFrom
			podEnv := &PodEnv{
				HostIPs:    tc.hostIPs,
				EnvSources: kubecontainer.EnvSources{Objects: envTestObjects(), ServiceEnv: tc.serviceEnv, NodeAllocatable: allocatable},
				podIPs:     tc.podIPs,
			}
			if tc.objects != nil {
				podEnv.Objects = *tc.objects
			}
			if tc.noNode {
				podEnv.NodeAllocatable = nil
			}
			got, skipped, err := containerEnv(pod, &pod.Spec.Containers[0], podEnv)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("containerEnv() error = %v, want %q", err, tc.wantErr)
				}
				if apierrors.IsNotFound(err) != tc.wantIsNotFd {
					t.Errorf("containerEnv() error %v: IsNotFound = %v, want %v", err, !tc.wantIsNotFd, tc.wantIsNotFd)
				}
				return
			}
			if err != nil {
				t.Fatalf("containerEnv() error = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("containerEnv() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkipped, skipped); diff != "" {
				t.Errorf("skipped keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidEnvFromKeysAreReportedInAnEvent(t *testing.T) {
	recorder := record.NewFakeRecorder(10)
	puller := newImagePuller(critest.NewFakeImageService(), recorder, testingclock.NewFakeClock(time.Now()))
	puller.users[containerTestImage] = imageUser{UID: ptr.To[int64](0)}
	m := &Manager{config: Config{PodLogDir: t.TempDir()}, recorder: recorder, puller: puller}

	pod := envTestPod()
	pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
		{Prefix: "X_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "odd"}}},
	}
	env := &PodEnv{PodDir: t.TempDir(), EnvSources: kubecontainer.EnvSources{Objects: kubecontainer.EnvObjects{Secrets: map[string]*corev1.Secret{
		"odd": {Data: map[string][]byte{"fine": []byte("1"), "a=b": []byte("2")}},
	}}}}
	config, err := m.generateContainerConfig(pod, &pod.Spec.Containers[0], ContainerToStart{}, containerTestImage, env)
	if err != nil {
		t.Fatalf("generateContainerConfig() error = %v", err)
	}
	var names []string
	for _, kv := range config.Envs {
		names = append(names, kv.Key)
	}
	if diff := cmp.Diff([]string{"X_fine"}, names); diff != "" {
		t.Errorf("env names (-want +got):\n%s", diff)
	}
	want := []string{"Warning InvalidEnvironmentVariableNames Keys [X_a=b] from the EnvFrom secret shop/odd were skipped since they are considered invalid environment variable names."}
	if diff := cmp.Diff(want, drainEvents(recorder)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
