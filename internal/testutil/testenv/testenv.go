// Package testenv starts what the envtest-based tests of several packages
// share: a real API server (kube-apiserver and etcd from
// KUBEBUILDER_ASSETS; no controller-manager, no scheduler) and a
// controller-runtime manager bound to the test's life.
package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var setLogger sync.Once

// StartAPIServer starts a fresh API server for one test and stops it when
// the test ends. Without KUBEBUILDER_ASSETS the test fails: `make test`
// sets it.
func StartAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run this test through `make test`, which points it at a folder holding kube-apiserver and etcd")
	}
	// controller-runtime complains when its logger is never set. Its
	// messages outlive any one test, so they go to stderr, which go test
	// shows when the package fails.
	setLogger.Do(func() {
		ctrllog.SetLogger(funcr.New(func(prefix, args string) {
			fmt.Fprintln(os.Stderr, prefix, args)
		}, funcr.Options{}))
	})

	env := &envtest.Environment{
		// Two cores under -race start kube-apiserver slowly.
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the test API server: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stopping the test API server: %v", err)
		}
	})
	return cfg
}

// RunManager starts mgr and stops it, checking its error, when the test
// ends. It returns the context the manager runs under.
func RunManager(t *testing.T, mgr manager.Manager) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return ctx
}
