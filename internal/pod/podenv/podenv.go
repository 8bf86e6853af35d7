// Package podenv reads from the API server what the containers of a pod
// draw on when they start, for the runtime package, which reads nothing
// itself: the ConfigMaps and Secrets their env and envFrom name, the
// pod's imagePullSecrets, the Services behind the service environment
// variables, and the node's allocatable resources.
//
// ConfigMaps and Secrets are read one by one, uncached: a cached read
// would start a cluster-wide watch, which the node's identity may not make
// (the Node authorizer lets a node read only the objects its own pods
// use). They are read only when containers are about to start, so a pod
// start costs one GET per object its containers name, and a running pod
// none. Services and the Node come from the manager's informers: one
// cluster-wide LIST and WATCH of Services per node, as the kubelet keeps,
// and no call per pod start.
package podenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubecontainer "github.com/nodelet/nodelet/internal/container"
)

// Gatherer reads what containers start with. Safe for concurrent use.
type Gatherer struct {
	// APIReader reads ConfigMaps and Secrets straight from the API server
	// (the manager's API reader).
	APIReader client.Reader
	// Cache lists Services and gets the Node from the manager's informers.
	Cache client.Reader
	// NodeName is this node, whose allocatable stands in for unset limits.
	NodeName string
	// Recorder records the kubelet's FailedToRetrieveImagePullSecret.
	Recorder record.EventRecorder
}

// Gather reads what containers (of pod) need to start into env: Objects,
// ServiceEnv, NodeAllocatable and PullSecrets. An object that does not
// exist is left out, for the runtime to report as the kubelet does. The
// error joins the reads that failed for another reason (the API server
// unreachable, the Node authorizer not yet aware of the pod's binding):
// those objects' errors are in env.Objects too, so the containers that
// need them fail with them, and the caller should try again soon.
func (g *Gatherer) Gather(ctx context.Context, pod *corev1.Pod, containers []*corev1.Container, env *kubecontainer.EnvSources) error {
	var errs []error

	configMaps, secrets := References(containers)
	env.Objects = kubecontainer.EnvObjects{
		ConfigMaps: map[string]*corev1.ConfigMap{},
		Secrets:    map[string]*corev1.Secret{},
		Errors:     map[string]error{},
	}
	for _, name := range configMaps {
		cm := &corev1.ConfigMap{}
		if found, err := g.get(ctx, pod.Namespace, name, cm); err != nil {
			// The API server's words are what the user reads, as under
			// the kubelet.
			env.Objects.Errors[kubecontainer.EnvObjectKey("configmap", name)] = err
			errs = append(errs, fmt.Errorf("reading ConfigMap %s/%s: %w", pod.Namespace, name, err))
		} else if found {
			env.Objects.ConfigMaps[name] = cm
		}
	}
	for _, name := range secrets {
		secret := &corev1.Secret{}
		if found, err := g.get(ctx, pod.Namespace, name, secret); err != nil {
			env.Objects.Errors[kubecontainer.EnvObjectKey("secret", name)] = err
			errs = append(errs, fmt.Errorf("reading Secret %s/%s: %w", pod.Namespace, name, err))
		} else if found {
			env.Objects.Secrets[name] = secret
		}
	}

	serviceEnv, err := g.serviceEnv(ctx, pod)
	if err != nil {
		errs = append(errs, err)
	}
	env.ServiceEnv = serviceEnv

	env.NodeAllocatable = nil
	node := &corev1.Node{}
	if err := g.Cache.Get(ctx, types.NamespacedName{Name: g.NodeName}, node); err != nil {
		// Only resourceFieldRef limits need it; they then fail with the
		// kubelet's message.
		klog.FromContext(ctx).Info("Could not read the Node for its allocatable resources", "node", g.NodeName, "err", err.Error())
	} else {
		env.NodeAllocatable = node.Status.Allocatable
	}

	env.PullSecrets = g.pullSecrets(ctx, pod)
	return errors.Join(errs...)
}

// get reads one object uncached. An object that does not exist is no
// error: found is then false.
func (g *Gatherer) get(ctx context.Context, namespace, name string, obj client.Object) (found bool, err error) {
	err = g.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// pullSecrets reads the pod's imagePullSecrets. As the kubelet does, those
// that cannot be read are named in one event and the pull goes on with the
// others. Secrets named only on the pod's ServiceAccount are the pod's too:
// the ServiceAccount admission plugin copies them into the pod when it is
// created, and only those does the Node authorizer let the node read.
func (g *Gatherer) pullSecrets(ctx context.Context, pod *corev1.Pod) []corev1.Secret {
	var (
		secrets []corev1.Secret
		failed  []string
	)
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			// The API once let empty names through.
			continue
		}
		secret := &corev1.Secret{}
		err := g.APIReader.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, secret)
		if err != nil {
			klog.FromContext(ctx).Info("Unable to retrieve pull secret, the image pull may not succeed.", "pod", klog.KObj(pod), "secret", klog.KRef(pod.Namespace, ref.Name), "err", err.Error())
			failed = append(failed, ref.Name)
			continue
		}
		secrets = append(secrets, *secret)
	}
	if len(failed) > 0 {
		g.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedToRetrieveImagePullSecret",
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return secrets
}

// References are the names of the ConfigMaps and Secrets the env and
// envFrom of containers name, each once, sorted.
func References(containers []*corev1.Container) (configMaps, secrets []string) {
	for _, c := range containers {
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				configMaps = append(configMaps, from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				secrets = append(secrets, from.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				configMaps = append(configMaps, ref.Name)
			}
			if ref := e.ValueFrom.SecretKeyRef; ref != nil {
				secrets = append(secrets, ref.Name)
			}
		}
	}
	slices.Sort(configMaps)
	slices.Sort(secrets)
	return slices.Compact(configMaps), slices.Compact(secrets)
}

// masterServiceName is the API server's own Service in the default
// namespace, whose variables every pod gets.
const masterServiceName = "kubernetes"

// serviceEnv reads the Services a pod gets variables for from the cache.
func (g *Gatherer) serviceEnv(ctx context.Context, pod *corev1.Pod) (map[string]string, error) {
	var services []corev1.Service
	var errs []error
	master := &corev1.Service{}
	switch err := g.Cache.Get(ctx, types.NamespacedName{Namespace: metav1.NamespaceDefault, Name: masterServiceName}, master); {
	case err == nil:
		services = append(services, *master)
	case !apierrors.IsNotFound(err):
		errs = append(errs, fmt.Errorf("reading the %s Service: %w", masterServiceName, err))
	}
	if enableServiceLinks(pod) {
		list := &corev1.ServiceList{}
		if err := g.Cache.List(ctx, list, client.InNamespace(pod.Namespace)); err != nil {
			errs = append(errs, fmt.Errorf("listing the Services of namespace %s: %w", pod.Namespace, err))
		}
		services = append(services, list.Items...)
	}
	return ServiceEnv(services, pod.Namespace, enableServiceLinks(pod)), errors.Join(errs...)
}

// enableServiceLinks is the pod's setting; unset is the API's default,
// true.
func enableServiceLinks(pod *corev1.Pod) bool {
	return pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
}

// ServiceEnv are the variables that tell a pod's containers where
// services are, as the kubelet makes them: always those of the API
// server's own Service (default/kubernetes), and, with enableServiceLinks,
// those of every Service of the pod's namespace (which win over the API
// server's on a clash). Services without a cluster IP (headless,
// ExternalName) give none. For a Service "my-db" with port 5432/TCP
// named "pg":
//
//	MY_DB_SERVICE_HOST=10.96.0.12        MY_DB_SERVICE_PORT=5432
//	MY_DB_SERVICE_PORT_PG=5432           MY_DB_PORT=tcp://10.96.0.12:5432
//	MY_DB_PORT_5432_TCP=tcp://10.96.0.12:5432
//	MY_DB_PORT_5432_TCP_PROTO=tcp        MY_DB_PORT_5432_TCP_PORT=5432
//	MY_DB_PORT_5432_TCP_ADDR=10.96.0.12
func ServiceEnv(services []corev1.Service, namespace string, enableServiceLinks bool) map[string]string {
	chosen := map[string]*corev1.Service{}
	for i := range services {
		s := &services[i]
		if s.Namespace == metav1.NamespaceDefault && s.Name == masterServiceName {
			if _, ok := chosen[s.Name]; !ok {
				chosen[s.Name] = s
			}
		} else if s.Namespace == namespace && enableServiceLinks {
			chosen[s.Name] = s
		}
	}
	env := map[string]string{}
	// In name order, so that a clash of two Services' variables always
	// ends the same way.
	names := make([]string, 0, len(chosen))
	for name := range chosen {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		addServiceEnv(env, chosen[name])
	}
	return env
}

func addServiceEnv(env map[string]string, s *corev1.Service) {
	ip := s.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone || len(s.Spec.Ports) == 0 {
		return
	}
	prefix := envName(s.Name)
	env[prefix+"_SERVICE_HOST"] = ip
	env[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(s.Spec.Ports[0].Port))
	for i, port := range s.Spec.Ports {
		if port.Name != "" {
			env[prefix+"_SERVICE_PORT_"+envName(port.Name)] = strconv.Itoa(int(port.Port))
		}
		// Docker links' variables.
		protocol := string(corev1.ProtocolTCP)
		if port.Protocol != "" {
			protocol = string(port.Protocol)
		}
		url := strings.ToLower(protocol) + "://" + net.JoinHostPort(ip, strconv.Itoa(int(port.Port)))
		if i == 0 {
			env[prefix+"_PORT"] = url
		}
		portPrefix := fmt.Sprintf("%s_PORT_%d_%s", prefix, port.Port, strings.ToUpper(protocol))
		env[portPrefix] = url
		env[portPrefix+"_PROTO"] = strings.ToLower(protocol)
		env[portPrefix+"_PORT"] = strconv.Itoa(int(port.Port))
		env[portPrefix+"_ADDR"] = ip
	}
}

// envName turns a DNS label into a variable name: my-db is MY_DB.
func envName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
