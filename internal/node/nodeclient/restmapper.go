package nodeclient

import (
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewRESTMapper is the manager's REST mapper (its MapperProvider): the
// kinds of the node's caches, its Pods, its Node and the Services (the
// containers' environment), are known without
// asking the API server, so that the manager, whose caches need to know
// whether each is namespaced, is built before the API server answers —
// kubeadm's API server is one of the node's static pods. Every other kind
// is found through discovery when first used.
func NewRESTMapper(config *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	discovered, err := apiutil.NewDynamicRESTMapper(config, httpClient)
	if err != nil {
		return nil, err
	}
	known := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion})
	known.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	known.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	known.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	return knownFirst{known: known, discovered: discovered}, nil
}

// knownFirst answers from known, and asks discovered only what known does
// not hold.
type knownFirst struct {
	known, discovered meta.RESTMapper
}

func (m knownFirst) KindFor(resource schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	if kind, err := m.known.KindFor(resource); err == nil {
		return kind, nil
	}
	return m.discovered.KindFor(resource)
}

func (m knownFirst) KindsFor(resource schema.GroupVersionResource) ([]schema.GroupVersionKind, error) {
	if kinds, err := m.known.KindsFor(resource); err == nil {
		return kinds, nil
	}
	return m.discovered.KindsFor(resource)
}

func (m knownFirst) ResourceFor(input schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	if resource, err := m.known.ResourceFor(input); err == nil {
		return resource, nil
	}
	return m.discovered.ResourceFor(input)
}

func (m knownFirst) ResourcesFor(input schema.GroupVersionResource) ([]schema.GroupVersionResource, error) {
	if resources, err := m.known.ResourcesFor(input); err == nil {
		return resources, nil
	}
	return m.discovered.ResourcesFor(input)
}

func (m knownFirst) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if mapping, err := m.known.RESTMapping(gk, versions...); err == nil {
		return mapping, nil
	}
	return m.discovered.RESTMapping(gk, versions...)
}

func (m knownFirst) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	if mappings, err := m.known.RESTMappings(gk, versions...); err == nil && len(mappings) > 0 {
		return mappings, nil
	}
	return m.discovered.RESTMappings(gk, versions...)
}

func (m knownFirst) ResourceSingularizer(resource string) (string, error) {
	if singular, err := m.known.ResourceSingularizer(resource); err == nil {
		return singular, nil
	}
	return m.discovered.ResourceSingularizer(resource)
}
