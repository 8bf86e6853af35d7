package volume

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// The usage of pods' volumes, for /stats/summary and the kubelet's
// kubelet_volume_stats_* metrics. A volume is measured when asked for and
// its last measurement is older than the stats period (the kubelet's
// volumeStatsAggPeriod, a minute), so nothing is walked when nobody
// asks, and a volume at most once a period however often it is asked.
// Measuring runs apart from the request: a request waits for it a short
// while (measureWait), then serves what was measured before; a big volume
// never holds the node's API up.

// measureWait is how long a request for stats waits for the volumes it
// needs measured before it serves their previous measurement.
const measureWait = 5 * time.Second

// concurrentWalks bounds the volumes walked at once: walking is disk I/O
// and CPU taken from the node's pods.
const concurrentWalks = 2

// statsTarget is a volume whose usage is reported.
type statsTarget struct {
	uid types.UID
	// pod names the pod, for the events of its volumes' conditions.
	pod    types.NamespacedName
	name   string
	path   string
	method usageMethod
	// claim is the PersistentVolumeClaim the volume mounts; nil for
	// another volume.
	claim *statsapi.PVCReference
	// csi names the volume for its driver (usageCSI).
	csi csiVolumeID
}

// usageCache keeps the last measurement of each volume, by pod and name.
type usageCache struct {
	mu      sync.Mutex
	entries map[types.UID]map[string]*usageEntry
}

type usageEntry struct {
	// measuredAt is when the last measurement started; zero before one.
	measuredAt time.Time
	// last is the last measurement; nil before one, or when it failed.
	last *usage
	// running is closed when the measurement under way ends; nil when
	// none is.
	running chan struct{}
}

// PodVolumeStats is the usage of the volumes of every pod set up, by pod
// UID, in the order of each pod's spec, as the summary's pod volume
// stats: a volume not measured yet, or whose measurement failed, is left
// out.
func (m *Manager) PodVolumeStats(ctx context.Context) map[types.UID][]statsapi.VolumeStats {
	return m.volumeStats(ctx, func(statsTarget) bool { return true })
}

// ClaimVolumeStats is the usage of every PersistentVolumeClaim mounted by
// a pod of the node, each with its pvcRef, as PodVolumeStats gives them.
func (m *Manager) ClaimVolumeStats(ctx context.Context) []statsapi.VolumeStats {
	var out []statsapi.VolumeStats
	for _, pod := range m.volumeStats(ctx, func(t statsTarget) bool { return t.claim != nil }) {
		out = append(out, pod...)
	}
	return out
}

// volumeStats measures the volumes that pick keeps, as due, and returns
// what is measured of them.
func (m *Manager) volumeStats(ctx context.Context, pick func(statsTarget) bool) map[types.UID][]statsapi.VolumeStats {
	if m.statsPeriod < 0 {
		return nil
	}
	var targets []statsTarget
	m.mu.Lock()
	for _, pod := range m.statsTargets {
		for _, t := range pod {
			if pick(t) {
				targets = append(targets, t)
			}
		}
	}
	m.mu.Unlock()

	now := m.clock.Now()
	var running []chan struct{}
	for _, t := range targets {
		if done := m.measure(t, now); done != nil {
			running = append(running, done)
		}
	}
	if len(running) > 0 {
		timer := m.clock.NewTimer(measureWait)
		defer timer.Stop()
	wait:
		for _, done := range running {
			select {
			case <-done:
			case <-timer.C():
				break wait
			case <-ctx.Done():
				break wait
			}
		}
	}

	out := map[types.UID][]statsapi.VolumeStats{}
	m.usage.mu.Lock()
	defer m.usage.mu.Unlock()
	for _, t := range targets {
		entry := m.usage.entries[t.uid][t.name]
		if entry == nil || entry.last == nil {
			continue
		}
		out[t.uid] = append(out[t.uid], statsapi.VolumeStats{FsStats: fsStats(*entry.last), Name: t.name, PVCRef: t.claim})
	}
	return out
}

// measure starts measuring t when its last measurement is due, and
// returns a channel closed when the measurement under way (new or not)
// ends; nil when none is.
func (m *Manager) measure(t statsTarget, now time.Time) chan struct{} {
	m.usage.mu.Lock()
	defer m.usage.mu.Unlock()
	if m.usage.entries == nil {
		m.usage.entries = map[types.UID]map[string]*usageEntry{}
	}
	pod := m.usage.entries[t.uid]
	if pod == nil {
		pod = map[string]*usageEntry{}
		m.usage.entries[t.uid] = pod
	}
	entry := pod[t.name]
	if entry == nil {
		entry = &usageEntry{}
		pod[t.name] = entry
	}
	if entry.running != nil || !needsMeasuring(entry.measuredAt, now, m.statsPeriod) {
		return entry.running
	}
	done := make(chan struct{})
	entry.measuredAt, entry.running = now, done
	go func() {
		u, err := m.measureVolume(t)
		if err != nil && !errors.Is(err, errCSIStatsNotSupported) {
			// A pod torn down meanwhile, most often, or a driver that
			// failed to answer.
			m.log.V(1).Info("Failed to measure a volume's usage", "podUID", t.uid, "volume", t.name, "err", err.Error())
		}
		if message, ok := volumeConditionEvent(t.name, u); err == nil && ok && m.recorder != nil {
			// As the kubelet, at each measurement that finds it so.
			ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: t.pod.Namespace, Name: t.pod.Name, UID: t.uid}
			m.recorder.Event(ref, corev1.EventTypeWarning, "VolumeConditionAbnormal", message)
		}
		m.usage.mu.Lock()
		defer m.usage.mu.Unlock()
		entry.last = nil
		if err == nil {
			entry.last = &u
		}
		entry.running = nil
		close(done)
	}()
	return done
}

// measureVolume measures t now: a CSI volume by its driver, any other on
// the node, with at most concurrentWalks at once (a driver's answer is not
// the node's disk I/O, so it waits for no walk).
func (m *Manager) measureVolume(t statsTarget) (usage, error) {
	if t.method == usageCSI {
		return m.measureCSI(t, m.clock.Now())
	}
	m.walks <- struct{}{}
	defer func() { <-m.walks }()
	return measureUsage(t.path, t.method, m.clock.Now())
}

// setStatsTargets records the pod's volumes whose usage is reported.
func (m *Manager) setStatsTargets(uid types.UID, targets []statsTarget) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(targets) == 0 {
		delete(m.statsTargets, uid)
		return
	}
	m.statsTargets[uid] = targets
}

// forgetUsage drops what was measured of the pod's volumes.
func (m *Manager) forgetUsage(uid types.UID) {
	m.usage.mu.Lock()
	defer m.usage.mu.Unlock()
	delete(m.usage.entries, uid)
}
