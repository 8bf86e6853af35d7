package runtimeclass

import (
	"context"
	"testing"

	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The client-go fake clientset stands in for the API server.
func TestHandler(t *testing.T) {
	r := Resolver{Client: fake.NewClientset(&nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "alt"}, Handler: "runc-alt"})}
	tests := map[string]struct {
		name        string
		wantHandler string
		wantErr     string
	}{
		"no name is the default handler": {name: ""},
		"an existing RuntimeClass":       {name: "alt", wantHandler: "runc-alt"},
		"a missing one, in the kubelet's words": {name: "gone",
			wantErr: `runtimeclass.node.k8s.io "gone" not found`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			handler, err := r.Handler(context.Background(), tc.name)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if handler != tc.wantHandler || gotErr != tc.wantErr {
				t.Errorf("Handler(%q) = %q, %q; want %q, %q", tc.name, handler, gotErr, tc.wantHandler, tc.wantErr)
			}
		})
	}
}
