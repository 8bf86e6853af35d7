package container

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// EnvSources are what the containers of a pod draw on from the API server
// when they start, read by package podenv for the runtime, which asks the
// API server for nothing itself.
type EnvSources struct {
	// Objects are the ConfigMaps and Secrets the env and envFrom of the
	// containers to start refer to.
	Objects EnvObjects
	// ServiceEnv are the variables that tell containers where services are
	// (KUBERNETES_SERVICE_HOST and the rest), enableServiceLinks honoured.
	ServiceEnv map[string]string
	// NodeAllocatable stands in for the limits a container leaves unset,
	// in resourceFieldRefs; nil when the Node could not be read.
	NodeAllocatable corev1.ResourceList
	// PullSecrets are the pod's imagePullSecrets that could be read; the
	// registry credentials in them go with the pulls of the pod's images.
	PullSecrets []corev1.Secret
}

// EnvObjects are the ConfigMaps and Secrets that the env and envFrom of a
// pod's containers name, as the caller read them from the API server.
type EnvObjects struct {
	// ConfigMaps and Secrets by name, in the pod's namespace. An object
	// in neither these maps nor Errors does not exist.
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	// Errors are why objects could not be read, when not because they do
	// not exist, by EnvObjectKey.
	Errors map[string]error
}

// EnvObjectKey names an object in EnvObjects.Errors: "configmap/NAME" or
// "secret/NAME".
func EnvObjectKey(kind, name string) string { return kind + "/" + name }

// ConfigMap returns a ConfigMap the caller read, or the error the kubelet
// gives for it: `configmap "NAME" not found` when it does not exist.
func (o EnvObjects) ConfigMap(name string) (*corev1.ConfigMap, error) {
	if err := o.Errors[EnvObjectKey("configmap", name)]; err != nil {
		return nil, err
	}
	if cm, ok := o.ConfigMaps[name]; ok && cm != nil {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmap"), name)
}

// Secret returns a Secret the caller read, or `secret "NAME" not found`.
func (o EnvObjects) Secret(name string) (*corev1.Secret, error) {
	if err := o.Errors[EnvObjectKey("secret", name)]; err != nil {
		return nil, err
	}
	if secret, ok := o.Secrets[name]; ok && secret != nil {
		return secret, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secret"), name)
}
