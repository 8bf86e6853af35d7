package node

// Shared set-up for the tests that run against a real API server (envtest:
// kube-apiserver and etcd from KUBEBUILDER_ASSETS; no controller-manager, no
// scheduler).

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

var setEnvtestLogger sync.Once

// startEnvtest starts a fresh API server for one test and stops it when the
// test ends. Without KUBEBUILDER_ASSETS the test fails: `make test` sets it.
func startEnvtest(t *testing.T) *rest.Config {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run this test through `make test`, which points it at a folder holding kube-apiserver and etcd")
	}
	// controller-runtime complains when its logger is never set. Its
	// messages outlive any one test, so they go to stderr, which go test
	// shows when the package fails.
	setEnvtestLogger.Do(func() {
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

// eventually polls check until it passes, or fails the test at the
// deadline with check's last error.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runManager starts mgr and stops it, checking its error, when the test
// ends. It returns the context the manager runs under.
func runManager(t *testing.T, mgr manager.Manager) context.Context {
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
