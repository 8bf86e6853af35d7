package staticpod

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodelet/nodelet/internal/testutil/await"
)

// TestSourcesFollowTheFolderAndTheURL: a manifest written into the folder
// appears at once (inotify, not the hour-long check period), a removed one
// goes; the URL's pods come with the headers asked for, and a failed fetch
// keeps the last good set.
func TestSourcesFollowTheFolderAndTheURL(t *testing.T) {
	dir := t.TempDir()
	var failing atomic.Bool
	var failed atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if failing.Load() || req.Header.Get("X-Node") != "n1" {
			failed.Add(1)
			http.Error(w, "no", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(strings.Replace(busybox, "name: web", "name: remote", 1)))
	}))
	defer server.Close()

	var mu sync.Mutex
	changed := map[types.NamespacedName]int{}
	sources := NewSources(Options{
		NodeName: "n1", Path: dir, FileCheckFrequency: time.Hour,
		URL: server.URL, Header: http.Header{"X-Node": {"n1"}}, HTTPCheckFrequency: 50 * time.Millisecond,
		OnChange: func(key types.NamespacedName) {
			mu.Lock()
			changed[key]++
			mu.Unlock()
		},
		Log: logr.Discard(),
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = sources.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	remote := types.NamespacedName{Namespace: "default", Name: "remote-n1"}
	local := types.NamespacedName{Namespace: "default", Name: "web-n1"}
	await.Eventually(t, 10*time.Second, "the URL's pod", func(context.Context) error {
		if _, ok := sources.Get(remote); !ok || !sources.Ready() {
			return errNotYet
		}
		return nil
	})
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(busybox), 0o600); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 10*time.Second, "the folder's new pod, told", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := sources.Get(local); !ok || changed[local] != 1 {
			return errNotYet
		}
		return nil
	})
	pod, _ := sources.Get(local)
	if pod.Annotations["kubernetes.io/config.seen"] == "" {
		t.Errorf("annotations %v: no config.seen", pod.Annotations)
	}

	failing.Store(true)
	await.Eventually(t, 10*time.Second, "three failed fetches", func(context.Context) error {
		if failed.Load() < 3 {
			return errNotYet
		}
		return nil
	})
	if _, ok := sources.Get(remote); !ok {
		t.Error("a failed fetch dropped the URL's pod; want the last good set kept")
	}

	if err := os.Remove(filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 10*time.Second, "the removed manifest's pod gone", func(context.Context) error {
		if _, ok := sources.Get(local); ok {
			return errNotYet
		}
		return nil
	})
}

var errNotYet = errorString("not yet")

type errorString string

func (e errorString) Error() string { return string(e) }
