//go:build linux

// Tests of how a projected volume's sources are read, against an API
// server stand-in (net/http/httptest) whose token request and ConfigMap
// read each wait for the other to have arrived: read one after the
// other, they never finish. (The fake clientset cannot tell: it serves
// one call at a time.)
package volume

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestAProjectedVolumesSourcesAreReadAtOnce(t *testing.T) {
	arrived := make(chan struct{}, 2)
	// meet notes a request's arrival and reports whether the other one
	// arrived too before the deadline.
	meet := func() bool {
		arrived <- struct{}{}
		deadline := time.After(5 * time.Second)
		for len(arrived) < cap(arrived) {
			select {
			case <-deadline:
				return false
			case <-time.After(time.Millisecond):
			}
		}
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/namespaces/shop/serviceaccounts/web/token", func(w http.ResponseWriter, r *http.Request) {
		if !meet() {
			http.Error(w, "the token request waited for the ConfigMap read, which never came: the sources are read one after the other", http.StatusGatewayTimeout)
			return
		}
		var request authenticationv1.TokenRequest
		_ = json.NewDecoder(r.Body).Decode(&request)
		request.Status = authenticationv1.TokenRequestStatus{Token: "token-1", ExpirationTimestamp: metav1.NewTime(start.Add(time.Hour))}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&request)
	})
	mux.HandleFunc("GET /api/v1/namespaces/shop/configmaps/kube-root-ca.crt", func(w http.ResponseWriter, r *http.Request) {
		if !meet() {
			http.Error(w, "the ConfigMap read waited for the token request, which never came: the sources are read one after the other", http.StatusGatewayTimeout)
			return
		}
		cm := rootCAConfigMap("shop", rootCA)
		cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cm)
	})
	server := httptest.NewServer(mux)
	defer server.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	m := NewManager(Options{RootDir: t.TempDir()}, client, clocktesting.NewFakeClock(start), logr.Discard())
	pod := makePod(apiAccessVolume())
	state := &volumeState{}

	payload, dueAt, err := m.projectedFiles(context.Background(), pod, &pod.Spec.Volumes[0], state, start)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for path, file := range payload {
		got[path] = string(file.Data)
	}
	want := map[string]string{"token": "token-1", "ca.crt": rootCA, "namespace": "shop"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if state.tokens[0] == nil || state.tokens[0].value != "token-1" {
		t.Fatalf("the volume holds token %+v, want token-1 kept for its refresh", state.tokens[0])
	}
	if !dueAt.Equal(state.tokens[0].refreshAt()) {
		t.Errorf("dueAt = %v, want the token's refresh %v", dueAt, state.tokens[0].refreshAt())
	}
}
