// Package resources spells a container's resources the short way tests
// write them: "cpu=100m,memory=64Mi".
package resources

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// List parses "cpu=100m,memory=64Mi"; nil for "". A quantity that does
// not parse panics: it is the test's own literal.
func List(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	list := corev1.ResourceList{}
	for _, pair := range strings.Split(s, ",") {
		name, quantity, _ := strings.Cut(pair, "=")
		list[corev1.ResourceName(name)] = resource.MustParse(quantity)
	}
	return list
}

// Requirements is a container's requests and limits, each as List takes it.
func Requirements(requests, limits string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: List(requests), Limits: List(limits)}
}
