package staticpod

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/nodelet/nodelet/internal/pod/podutil"
)

// Options configure Sources.
type Options struct {
	// NodeName is the node the pods are for.
	NodeName string
	// Path is the folder (or file) of manifests; empty: no file source.
	Path string
	// FileCheckFrequency is how often Path is read again, besides on the
	// changes inotify reports.
	FileCheckFrequency time.Duration
	// URL serves a Pod or a PodList; empty: no http source.
	URL string
	// Header is sent with each request to URL.
	Header http.Header
	// HTTPCheckFrequency is how often URL is fetched again.
	HTTPCheckFrequency time.Duration
	// Client fetches URL; nil: a client with a 10 s timeout.
	Client *http.Client
	// OnChange is told the key of each static pod added, changed or
	// removed, from Start's goroutines.
	OnChange func(key types.NamespacedName)
	Clock    clock.WithTicker
	Log      logr.Logger
}

// Sources keeps the static pods of the file and http sources, as the
// kubelet's config sources and their merge do: each source's last good
// set, merged by the pods' names. It is a manager.Runnable needing no API
// server.
type Sources struct {
	opts Options

	mu sync.Mutex
	// bySource is each source's last set read.
	bySource map[string][]*corev1.Pod
	// byKey are the merged pods.
	byKey map[types.NamespacedName]*corev1.Pod
	// seen is when each pod was first seen, by UID.
	seen map[types.UID]string
}

// NewSources returns the static pod sources of opts, read once Start runs.
func NewSources(opts Options) *Sources {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.OnChange == nil {
		opts.OnChange = func(types.NamespacedName) {}
	}
	return &Sources{
		opts:     opts,
		bySource: map[string][]*corev1.Pod{},
		byKey:    map[types.NamespacedName]*corev1.Pod{},
		seen:     map[types.UID]string{},
	}
}

// Get returns a copy of the static pod named key.
func (s *Sources) Get(key types.NamespacedName) (*corev1.Pod, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pod, ok := s.byKey[key]
	if !ok {
		return nil, false
	}
	return pod.DeepCopy(), true
}

// List returns copies of every static pod.
func (s *Sources) List() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(s.byKey))
	for _, pod := range s.byKey {
		pods = append(pods, pod.DeepCopy())
	}
	return pods
}

// Ready reports whether every configured source has been read once: until
// then a mirror pod without its static pod may only not be read yet.
func (s *Sources) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.bySource[podutil.FileSource]; s.opts.Path != "" && !ok {
		return false
	}
	if _, ok := s.bySource[podutil.HTTPSource]; s.opts.URL != "" && !ok {
		return false
	}
	return true
}

func (s *Sources) read(source string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.bySource[source]
	return ok
}

// NeedLeaderElection: every node reads its own static pods.
func (s *Sources) NeedLeaderElection() bool { return false }

// Start reads the sources until ctx ends: the folder at once, again on
// each change inotify reports and every FileCheckFrequency; the URL at
// once and every HTTPCheckFrequency.
func (s *Sources) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	if s.opts.Path != "" {
		wg.Go(func() { s.watchPath(ctx) })
	}
	if s.opts.URL != "" {
		wg.Go(func() { s.pollURL(ctx) })
	}
	wg.Wait()
	return nil
}

func (s *Sources) watchPath(ctx context.Context) {
	log := s.opts.Log.WithValues("path", s.opts.Path)
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		log.Error(err, "Could not watch the static pod path; reading it every period only", "period", s.opts.FileCheckFrequency)
	} else {
		defer watcher.Close()
	}
	watching := false
	var changes <-chan fsnotify.Event
	var watchErrors <-chan error
	if watcher != nil {
		changes, watchErrors = watcher.Events, watcher.Errors
	}
	ticker := s.opts.Clock.NewTicker(s.opts.FileCheckFrequency)
	defer ticker.Stop()
	for {
		// The folder may appear later (kubeadm writes it): watch it once
		// it exists.
		if watcher != nil && !watching {
			watching = watcher.Add(s.opts.Path) == nil
		}
		pods, errs := ReadPath(s.opts.Path, s.opts.NodeName)
		for _, err := range errs {
			log.Error(err, "Could not process manifest file; its pod is not run")
		}
		s.set(podutil.FileSource, pods)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case _, ok := <-changes:
			if !ok {
				changes = nil
			}
		case err, ok := <-watchErrors:
			if !ok {
				watchErrors = nil
			} else {
				log.Error(err, "Watching the static pod path failed")
			}
		}
	}
}

func (s *Sources) pollURL(ctx context.Context) {
	log := s.opts.Log.WithValues("url", s.opts.URL)
	ticker := s.opts.Clock.NewTicker(s.opts.HTTPCheckFrequency)
	defer ticker.Stop()
	for {
		pods, err := Fetch(ctx, s.opts.Client, s.opts.URL, s.opts.Header, s.opts.NodeName)
		if err != nil {
			// The last good set stays, as the kubelet's. A URL that never
			// answered counts as read, with no pods: unlike the kubelet,
			// whose clean-ups wait for every source, nodelet does not
			// leave the API's deleted pods running for a URL that is down.
			log.Error(err, "Could not read static pods from the URL; keeping the last ones read")
			if !s.read(podutil.HTTPSource) {
				s.set(podutil.HTTPSource, nil)
			}
		} else {
			s.set(podutil.HTTPSource, pods)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// set makes pods the source's set and tells OnChange the keys of the pods
// added, changed (a new UID) or removed.
func (s *Sources) set(source string, pods []*corev1.Pod) {
	s.mu.Lock()
	s.bySource[source] = pods
	merged, dropped := merge(s.bySource[podutil.FileSource], s.bySource[podutil.HTTPSource])
	now := s.opts.Clock.Now().Format(time.RFC3339Nano)
	seen := map[types.UID]string{}
	for _, pod := range merged {
		at, ok := s.seen[pod.UID]
		if !ok {
			at = now
		}
		seen[pod.UID] = at
		pod.Annotations[podutil.ConfigSeenAnnotation] = at
	}
	var changed []types.NamespacedName
	for key, pod := range merged {
		if old, ok := s.byKey[key]; !ok || old.UID != pod.UID {
			changed = append(changed, key)
		}
	}
	for key := range s.byKey {
		if _, ok := merged[key]; !ok {
			changed = append(changed, key)
		}
	}
	s.byKey, s.seen = merged, seen
	s.mu.Unlock()

	for _, pod := range dropped {
		s.opts.Log.Info("Dropped a static pod whose name another static pod has", "pod", klog.KObj(pod), "source", pod.Annotations[podutil.ConfigSourceAnnotation])
	}
	for _, key := range changed {
		s.opts.Log.V(1).Info("Static pod changed", "pod", key)
		s.opts.OnChange(key)
	}
}

// merge keys the pods of the file source, then the http source's, by name;
// a pod whose name an earlier one has is dropped.
func merge(sets ...[]*corev1.Pod) (merged map[types.NamespacedName]*corev1.Pod, dropped []*corev1.Pod) {
	merged = map[types.NamespacedName]*corev1.Pod{}
	for _, set := range sets {
		for _, pod := range set {
			key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
			if _, ok := merged[key]; ok {
				dropped = append(dropped, pod)
				continue
			}
			merged[key] = pod.DeepCopy()
		}
	}
	return merged, dropped
}
