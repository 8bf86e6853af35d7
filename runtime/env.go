package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodelet/nodelet/internal/pod/fieldpath"
	"github.com/nodelet/nodelet/internal/util/expansion"
)

// envVar is one resolved environment variable.
type envVar struct {
	Name  string
	Value string
}

// skippedEnvFromKeys are the keys of one envFrom source that are not valid
// environment variable names, prefix included, and were left out.
type skippedEnvFromKeys struct {
	// Kind is "configMap" or "secret".
	Kind string
	Name string
	Keys []string
}

// envList is an environment being built: a name set twice keeps its first
// place and takes its last value.
type envList struct {
	vars  []envVar
	index map[string]int
}

func (l *envList) set(name, value string) {
	if i, ok := l.index[name]; ok {
		l.vars[i].Value = value
		return
	}
	if l.index == nil {
		l.index = map[string]int{}
	}
	l.index[name] = len(l.vars)
	l.vars = append(l.vars, envVar{Name: name, Value: value})
}

func (l *envList) lookup(name string) (string, bool) {
	i, ok := l.index[name]
	if !ok {
		return "", false
	}
	return l.vars[i].Value, true
}

// containerEnv is the environment a container starts with, built as the
// kubelet builds it:
//
//  1. envFrom, source by source: every key of the ConfigMap or Secret, with
//     the source's prefix (an optional source that does not exist gives
//     nothing); a later source wins over an earlier one;
//  2. env, in order: a value has its $(VAR) references expanded against
//     the variables set so far and the service variables; a valueFrom is
//     read from its source (an optional one that is missing sets nothing);
//     env wins over envFrom;
//  3. the service variables (podEnv.ServiceEnv) the container does not set
//     itself.
//
// Unlike the kubelet's, whose order is a map's, the order is stable: steps
// 1 to 3, keys of one source sorted. The pod's IPs are podEnv's, known
// once its sandbox exists. Keys of an envFrom source that are not valid names
// are left out and returned in skipped, for an event. Errors are the
// kubelet's, which users see as CreateContainerConfigError.
func containerEnv(pod *corev1.Pod, container *corev1.Container, podEnv *PodEnv) (vars []envVar, skipped []skippedEnvFromKeys, err error) {
	var env envList
	for _, from := range container.EnvFrom {
		var (
			kind, name string
			optional   *bool
			data       map[string]string
			err        error
		)
		switch {
		case from.ConfigMapRef != nil:
			kind, name, optional = "configMap", from.ConfigMapRef.Name, from.ConfigMapRef.Optional
			var cm *corev1.ConfigMap
			if cm, err = podEnv.Objects.ConfigMap(name); err == nil {
				data = cm.Data
			}
		case from.SecretRef != nil:
			kind, name, optional = "secret", from.SecretRef.Name, from.SecretRef.Optional
			var secret *corev1.Secret
			if secret, err = podEnv.Objects.Secret(name); err == nil {
				data = make(map[string]string, len(secret.Data))
				for k, v := range secret.Data {
					data[k] = string(v)
				}
			}
		default:
			continue
		}
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(optional) {
				continue
			}
			return nil, nil, err
		}
		var invalid []string
		for _, key := range sortedKeys(data) {
			varName := from.Prefix + key
			if len(validation.IsRelaxedEnvVarName(varName)) > 0 {
				invalid = append(invalid, varName)
				continue
			}
			env.set(varName, data[key])
		}
		if len(invalid) > 0 {
			skipped = append(skipped, skippedEnvFromKeys{Kind: kind, Name: name, Keys: invalid})
		}
	}

	mapping := func(name string) string {
		if value, ok := env.lookup(name); ok {
			return value
		}
		if value, ok := podEnv.ServiceEnv[name]; ok {
			return value
		}
		return "$(" + name + ")"
	}
	for _, e := range container.Env {
		value := e.Value
		switch {
		case value != "":
			value = expansion.Expand(value, mapping)
		case e.ValueFrom != nil:
			var set bool
			if value, set, err = envValueFrom(pod, container, e.ValueFrom, podEnv); err != nil {
				return nil, nil, err
			}
			if !set {
				continue
			}
		}
		env.set(e.Name, value)
	}

	for _, name := range sortedKeys(podEnv.ServiceEnv) {
		if _, ok := env.lookup(name); !ok {
			env.set(name, podEnv.ServiceEnv[name])
		}
	}
	return env.vars, skipped, nil
}

// recordSkippedEnvFromKeys tells the user, with the kubelet's event, which
// envFrom keys did not make valid variable names.
func (m *Manager) recordSkippedEnvFromKeys(pod *corev1.Pod, skipped []skippedEnvFromKeys) {
	for _, s := range skipped {
		m.recorder.Eventf(pod, corev1.EventTypeWarning, "InvalidEnvironmentVariableNames",
			"Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered invalid environment variable names.",
			strings.Join(s.Keys, ", "), s.Kind, pod.Namespace, s.Name)
	}
}

// envValueFrom reads one env var's source. set is false when an optional
// ConfigMap, Secret or key is missing: the variable is then not set at all.
func envValueFrom(pod *corev1.Pod, container *corev1.Container, from *corev1.EnvVarSource, podEnv *PodEnv) (value string, set bool, err error) {
	switch {
	case from.FieldRef != nil:
		value, err = podFieldValue(pod, from.FieldRef.FieldPath, podEnv.podIPs, podEnv.HostIPs)
		return value, err == nil, err
	case from.ResourceFieldRef != nil:
		value, err = fieldpath.ContainerResource(pod, container.Name, from.ResourceFieldRef, podEnv.NodeAllocatable)
		return value, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := podEnv.Objects.ConfigMap(ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, err
		}
		value, ok := cm.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in ConfigMap %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return value, true, nil
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		secret, err := podEnv.Objects.Secret(ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, err
		}
		value, ok := secret.Data[ref.Key]
		if !ok {
			if isTrue(ref.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("couldn't find key %v in Secret %v/%v", ref.Key, pod.Namespace, ref.Name)
		}
		return string(value), true, nil
	case from.FileKeyRef != nil:
		return "", false, fmt.Errorf("env of container %q: fileKeyRef is not supported yet", container.Name)
	}
	// An empty source sets the variable to "", as an empty value does.
	return "", true, nil
}

// podFieldValue is a fieldRef's value: the pod's and the node's IPs, which
// are not fields of the Pod object nodelet holds, and the rest through the
// fieldpath package.
func podFieldValue(pod *corev1.Pod, fieldPath string, podIPs, hostIPs []string) (string, error) {
	switch fieldPath {
	case "status.podIP":
		if len(podIPs) == 0 {
			return "", nil
		}
		return podIPs[0], nil
	case "status.podIPs":
		return strings.Join(podIPs, ","), nil
	case "status.hostIP", "status.hostIPs":
		if len(hostIPs) == 0 {
			return "", errors.New("host IP unknown; known addresses: []")
		}
		if fieldPath == "status.hostIP" {
			return hostIPs[0], nil
		}
		return strings.Join(hostIPs, ","), nil
	}
	return fieldpath.PodField(pod, fieldPath)
}

func isTrue(b *bool) bool { return b != nil && *b }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func envMap(envs []envVar) map[string]string {
	values := make(map[string]string, len(envs))
	for _, e := range envs {
		values[e.Name] = e.Value
	}
	return values
}

// expandAll expands the $(NAME) references of inputs with values, as the
// API expands a container's command and args.
func expandAll(inputs []string, values map[string]string) []string {
	if len(inputs) == 0 {
		return nil
	}
	expanded := make([]string, len(inputs))
	for i, in := range inputs {
		expanded[i] = expansion.Expand(in, expansion.MappingFuncFor(values))
	}
	return expanded
}
