package podenv

// ServiceEnv and References are pure and tested on plain values. Gather
// reads through two client.Readers, here controller-runtime's fake client
// (with an interceptor for the API server's refusals); the reconciler's
// envtest tests and the e2e suite read through a real API server.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

func service(namespace, name, clusterIP string, ports ...corev1.ServicePort) corev1.Service {
	return corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
	}
}

func TestServiceEnv(t *testing.T) {
	master := service("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
	masterEnv := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
	}
	db := service("shop", "my-db", "10.96.0.12",
		corev1.ServicePort{Port: 5432},
		corev1.ServicePort{Name: "metrics-port", Port: 9187, Protocol: corev1.ProtocolUDP})
	dbEnv := map[string]string{
		"MY_DB_SERVICE_HOST":              "10.96.0.12",
		"MY_DB_SERVICE_PORT":              "5432",
		"MY_DB_SERVICE_PORT_METRICS_PORT": "9187",
		"MY_DB_PORT":                      "tcp://10.96.0.12:5432",
		"MY_DB_PORT_5432_TCP":             "tcp://10.96.0.12:5432",
		"MY_DB_PORT_5432_TCP_PROTO":       "tcp",
		"MY_DB_PORT_5432_TCP_PORT":        "5432",
		"MY_DB_PORT_5432_TCP_ADDR":        "10.96.0.12",
		"MY_DB_PORT_9187_UDP":             "udp://10.96.0.12:9187",
		"MY_DB_PORT_9187_UDP_PROTO":       "udp",
		"MY_DB_PORT_9187_UDP_PORT":        "9187",
		"MY_DB_PORT_9187_UDP_ADDR":        "10.96.0.12",
	}
	merge := func(maps ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range maps {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	cases := map[string]struct {
		services []corev1.Service
		links    bool
		want     map[string]string
	}{
		"the API server's Service and the namespace's": {
			services: []corev1.Service{master, db}, links: true,
			want: merge(masterEnv, dbEnv),
		},
		"without service links, the API server's only": {
			services: []corev1.Service{master, db}, links: false,
			want: masterEnv,
		},
		"other namespaces' Services give nothing": {
			services: []corev1.Service{master, service("other", "web", "10.96.0.30", corev1.ServicePort{Port: 80})}, links: true,
			want: masterEnv,
		},
		"headless and ExternalName Services give nothing": {
			services: []corev1.Service{
				service("shop", "headless", corev1.ClusterIPNone, corev1.ServicePort{Port: 80}),
				service("shop", "external", ""),
			},
			links: true,
			want:  map[string]string{},
		},
		"an IPv6 cluster IP is bracketed in URLs": {
			services: []corev1.Service{service("shop", "web", "fd00::1e", corev1.ServicePort{Port: 80})}, links: true,
			want: map[string]string{
				"WEB_SERVICE_HOST": "fd00::1e", "WEB_SERVICE_PORT": "80",
				"WEB_PORT": "tcp://[fd00::1e]:80", "WEB_PORT_80_TCP": "tcp://[fd00::1e]:80",
				"WEB_PORT_80_TCP_PROTO": "tcp", "WEB_PORT_80_TCP_PORT": "80", "WEB_PORT_80_TCP_ADDR": "fd00::1e",
			},
		},
		"the namespace's own kubernetes Service wins over the API server's": {
			services: []corev1.Service{master, service("shop", "kubernetes", "10.96.0.99", corev1.ServicePort{Port: 8443})}, links: true,
			want: map[string]string{
				"KUBERNETES_SERVICE_HOST": "10.96.0.99", "KUBERNETES_SERVICE_PORT": "8443",
				"KUBERNETES_PORT": "tcp://10.96.0.99:8443", "KUBERNETES_PORT_8443_TCP": "tcp://10.96.0.99:8443",
				"KUBERNETES_PORT_8443_TCP_PROTO": "tcp", "KUBERNETES_PORT_8443_TCP_PORT": "8443", "KUBERNETES_PORT_8443_TCP_ADDR": "10.96.0.99",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ServiceEnv(tc.services, "shop", tc.links)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ServiceEnv() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	containers := []*corev1.Container{
		{
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s1"}}},
			},
			Env: []corev1.EnvVar{
				{Name: "A", Value: "literal"},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "a"}, Key: "k"}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			},
		},
		{Env: []corev1.EnvVar{
			{Name: "D", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "b"}, Key: "k"}}},
			{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s0"}, Key: "k"}}},
		}},
	}
	configMaps, secrets := References(containers)
	if diff := cmp.Diff([]string{"a", "b"}, configMaps); diff != "" {
		t.Errorf("ConfigMaps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s0", "s1"}, secrets); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

func TestGather(t *testing.T) {
	objects := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}, Data: map[string]string{"color": "red"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "creds"}, Data: map[string][]byte{"user": []byte("alice")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []corev1.ServicePort{{Port: 443}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.5", Ports: []corev1.ServicePort{{Port: 80}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}},
	}
	// "guarded" is refused, as the Node authorizer refuses an object the
	// node's pods do not (yet) refer to.
	refuse := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if key.Name == "guarded" {
			return apierrors.NewForbidden(corev1.Resource("configmaps"), key.Name, errors.New("no relationship found between node 'node-1' and this object"))
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	reader := fake.NewClientBuilder().WithObjects(objects...).WithInterceptorFuncs(refuse).Build()
	recorder := record.NewFakeRecorder(10)
	g := &Gatherer{APIReader: reader, Cache: reader, NodeName: "node-1", Recorder: recorder}

	ref := func(kind, name string) corev1.EnvVar {
		source := &corev1.EnvVarSource{}
		if kind == "configmap" {
			source.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}
		} else {
			source.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}
		}
		return corev1.EnvVar{Name: "V", ValueFrom: source}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: corev1.PodSpec{
			EnableServiceLinks: ptr.To(false),
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "pull"}, {Name: ""}, {Name: "gone"}},
			Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
				ref("configmap", "settings"), ref("configmap", "absent"), ref("configmap", "guarded"),
				ref("secret", "creds"), ref("secret", "absent"),
			}}},
		},
	}

	env := &kubecontainer.EnvSources{}
	err := g.Gather(context.Background(), pod, []*corev1.Container{&pod.Spec.Containers[0]}, env)
	if err == nil || !strings.Contains(err.Error(), "reading ConfigMap shop/guarded") {
		t.Errorf("Gather() error = %v, want the refused read", err)
	}
	if got := env.Objects.ConfigMaps["settings"]; got == nil || got.Data["color"] != "red" {
		t.Errorf("ConfigMap settings = %v, want it read", got)
	}
	if got := env.Objects.Secrets["creds"]; got == nil || string(got.Data["user"]) != "alice" {
		t.Errorf("Secret creds = %v, want it read", got)
	}
	if _, ok := env.Objects.ConfigMaps["absent"]; ok {
		t.Errorf("a ConfigMap that does not exist is in Objects")
	}
	if err := env.Objects.Errors[kubecontainer.EnvObjectKey("configmap", "guarded")]; !apierrors.IsForbidden(err) {
		t.Errorf("error for ConfigMap guarded = %v, want the API server's Forbidden", err)
	}
	if len(env.Objects.Errors) != 1 {
		t.Errorf("Objects.Errors = %v, want the refused read only", env.Objects.Errors)
	}
	if diff := cmp.Diff(map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
		"KUBERNETES_PORT": "tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
	}, env.ServiceEnv); diff != "" {
		t.Errorf("ServiceEnv without service links (-want +got):\n%s", diff)
	}
	if got := env.NodeAllocatable[corev1.ResourceCPU]; got.String() != "2" {
		t.Errorf("NodeAllocatable = %v, want the Node's", env.NodeAllocatable)
	}
	if len(env.PullSecrets) != 1 || env.PullSecrets[0].Name != "pull" {
		t.Errorf("PullSecrets = %v, want the one that exists", env.PullSecrets)
	}
	select {
	case event := <-recorder.Events:
		want := "Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (gone); attempting to pull the image may not succeed."
		if event != want {
			t.Errorf("event = %q, want %q", event, want)
		}
	default:
		t.Errorf("no event for the pull secret that could not be read")
	}

	// With service links, the namespace's Services too.
	pod.Spec.EnableServiceLinks = nil
	if err := g.Gather(context.Background(), pod, nil, env); err != nil {
		t.Fatalf("Gather() error = %v", err)
	}
	if env.ServiceEnv["WEB_SERVICE_HOST"] != "10.96.0.5" || env.ServiceEnv["KUBERNETES_SERVICE_HOST"] != "10.96.0.1" {
		t.Errorf("ServiceEnv with service links = %v, want the namespace's web and the API server's", env.ServiceEnv)
	}
}
