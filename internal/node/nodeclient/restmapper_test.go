package nodeclient

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestRESTMapperKnowsTheCachesKindsWithoutTheAPIServer: the manager is
// built before the API server answers (kubeadm's is a static pod of the
// node), so the kinds its caches hold map with no server at all; the
// others are asked of discovery, which here fails. No server: the
// config names a closed port on the loopback.
func TestRESTMapperKnowsTheCachesKindsWithoutTheAPIServer(t *testing.T) {
	config := &rest.Config{Host: "https://127.0.0.1:1"}
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := NewRESTMapper(config, client)
	if err != nil {
		t.Fatal(err)
	}
	for kind, namespaced := range map[string]bool{"Pod": true, "Node": false, "Service": true} {
		mapping, err := mapper.RESTMapping(schema.GroupKind{Kind: kind}, "v1")
		if err != nil {
			t.Errorf("%s: %v, want a mapping without the API server", kind, err)
			continue
		}
		if got := mapping.Scope.Name() == "namespace"; got != namespaced {
			t.Errorf("%s namespaced = %v, want %v", kind, got, namespaced)
		}
	}
	if _, err := mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err == nil {
		t.Error("ConfigMap mapped with no API server to discover it from")
	}
}
