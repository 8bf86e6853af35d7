package volume

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
)

// Reading what the files of a volume hold: ConfigMaps, Secrets and
// service account tokens from the API server, the downward API from the
// pod.

// contents gathers the files of a volume that come from the API and the
// pod. dueAt is when a token in them needs refreshing; zero when none.
func (m *Manager) contents(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, state *volumeState, now time.Time) (payload map[string]fileProjection, dueAt time.Time, err error) {
	switch {
	case vol.ConfigMap != nil:
		payload, err = m.configMapFiles(ctx, pod.Namespace, vol.ConfigMap, modeOr(vol.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode), m.maxReadAge(state))
	case vol.Secret != nil:
		payload, err = m.secretFiles(ctx, pod.Namespace, vol.Secret, modeOr(vol.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode), m.maxReadAge(state))
	case vol.DownwardAPI != nil:
		payload, err = downwardAPIPayload(pod, vol.DownwardAPI.Items, modeOr(vol.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode), m.allocatable(ctx))
	case vol.Projected != nil:
		payload, dueAt, err = m.projectedFiles(ctx, pod, vol, state, now)
	default:
		err = fmt.Errorf("volume %q has no source nodelet knows", vol.Name)
	}
	return payload, dueAt, err
}

// projectedFiles gathers every source of a projected volume. Like the
// kubelet it reports every failing source at once and writes nothing until
// all succeed. dueAt is when the first of its tokens needs refreshing. The
// sources are read at once: most pods have the ServiceAccount's token
// volume, whose token request and ConfigMap read would otherwise be two
// round trips to the API server, one after the other, before the pod can
// start.
func (m *Manager) projectedFiles(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, state *volumeState, now time.Time) (payload map[string]fileProjection, dueAt time.Time, err error) {
	defaultMode := modeOr(vol.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
	sources := vol.Projected.Sources
	files := make([]map[string]fileProjection, len(sources))
	tokens := make([]*token, len(sources))
	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	for i := range sources {
		wg.Go(func() {
			files[i], tokens[i], errs[i] = m.projectedSource(ctx, pod, vol.Name, &sources[i], i, defaultMode, state, now)
		})
	}
	wg.Wait()

	payload = map[string]fileProjection{}
	for i, t := range tokens {
		if t == nil {
			continue
		}
		if state.tokens == nil {
			state.tokens = map[int]*token{}
		}
		state.tokens[i] = t
		due := t.refreshAt()
		if !due.After(now) {
			// The refresh failed and the current token was kept.
			due = now.Add(retryPeriod)
		}
		dueAt = earliest(dueAt, due)
	}
	if err := utilerrors.NewAggregate(slices.DeleteFunc(errs, func(err error) bool { return err == nil })); err != nil {
		return nil, time.Time{}, err
	}
	for _, f := range files {
		maps.Copy(payload, f)
	}
	return payload, dueAt, nil
}

// projectedSource gathers one source of a projected volume; for a token
// source it also returns the token, which the caller keeps in state (read
// here, written only once every source is done).
func (m *Manager) projectedSource(ctx context.Context, pod *corev1.Pod, volume string, source *corev1.VolumeProjection, index int, defaultMode int32, state *volumeState, now time.Time) (map[string]fileProjection, *token, error) {
	switch {
	case source.ServiceAccountToken != nil:
		t, err := m.token(ctx, pod, volume, source.ServiceAccountToken, state.tokens[index], now)
		if err != nil {
			return nil, nil, err
		}
		user := fsUser(pod)
		var fsGroup *int64
		if pod.Spec.SecurityContext != nil {
			fsGroup = pod.Spec.SecurityContext.FSGroup
		}
		return map[string]fileProjection{source.ServiceAccountToken.Path: {
			Data: []byte(t.value), Mode: tokenMode(defaultMode, user, fsGroup), FsUser: user,
		}}, t, nil
	case source.ConfigMap != nil:
		files, err := m.configMapFiles(ctx, pod.Namespace, &corev1.ConfigMapVolumeSource{
			LocalObjectReference: source.ConfigMap.LocalObjectReference,
			Items:                source.ConfigMap.Items,
			Optional:             source.ConfigMap.Optional,
		}, defaultMode, m.maxReadAge(state))
		return files, nil, err
	case source.Secret != nil:
		files, err := m.secretFiles(ctx, pod.Namespace, &corev1.SecretVolumeSource{
			SecretName: source.Secret.Name,
			Items:      source.Secret.Items,
			Optional:   source.Secret.Optional,
		}, defaultMode, m.maxReadAge(state))
		return files, nil, err
	case source.DownwardAPI != nil:
		files, err := downwardAPIPayload(pod, source.DownwardAPI.Items, defaultMode, m.allocatable(ctx))
		return files, nil, err
	}
	return nil, nil, nil
}

// token returns the token for one serviceAccountToken source, requesting
// a new one when none is held or the held one is due. When a refresh
// fails, a token that has not expired is kept, as the kubelet keeps it.
func (m *Manager) token(ctx context.Context, pod *corev1.Pod, volume string, source *corev1.ServiceAccountTokenProjection, held *token, now time.Time) (*token, error) {
	if held != nil && now.Before(held.refreshAt()) {
		return held, nil
	}
	fresh, err := m.requestToken(ctx, pod, source, now)
	if err != nil {
		if held != nil && !held.expired(now) {
			m.log.Error(err, "Kept the current service account token after a failed refresh", "pod", klog.KObj(pod), "volume", volume)
			return held, nil
		}
		return nil, fmt.Errorf("failed to fetch token: %w", err)
	}
	m.log.V(2).Info("Requested service account token", "pod", klog.KObj(pod), "volume", volume, "refreshAt", fresh.refreshAt())
	return fresh, nil
}

// maxReadAge is how old a shared read of a ConfigMap or Secret may be for
// the volume: none for its first set-up, half a sync period for a resync.
func (m *Manager) maxReadAge(state *volumeState) time.Duration {
	if !state.ready || m.syncPeriod <= 0 {
		return 0
	}
	return m.syncPeriod / 2
}

// configMapFiles reads a ConfigMap, or takes a read no older than maxAge,
// and returns the files it gives.
func (m *Manager) configMapFiles(ctx context.Context, namespace string, source *corev1.ConfigMapVolumeSource, defaultMode int32, maxAge time.Duration) (map[string]fileProjection, error) {
	optional := source.Optional != nil && *source.Optional
	cm, err := cachedGet(&m.objects, objectKey{"configmap", namespace, source.Name}, m.clock.Now(), maxAge, func() (*corev1.ConfigMap, error) {
		return m.client.CoreV1().ConfigMaps(namespace).Get(ctx, source.Name, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err) && optional:
		cm = &corev1.ConfigMap{}
	case apierrors.IsNotFound(err):
		// The kubelet's words, not the API server's ("configmaps").
		return nil, apierrors.NewNotFound(corev1.Resource("configmap"), source.Name)
	case err != nil:
		return nil, err
	}
	return configMapPayload(cm, source.Items, defaultMode, optional)
}

// secretFiles reads a Secret, or takes a read no older than maxAge, and
// returns the files it gives.
func (m *Manager) secretFiles(ctx context.Context, namespace string, source *corev1.SecretVolumeSource, defaultMode int32, maxAge time.Duration) (map[string]fileProjection, error) {
	optional := source.Optional != nil && *source.Optional
	secret, err := cachedGet(&m.objects, objectKey{"secret", namespace, source.SecretName}, m.clock.Now(), maxAge, func() (*corev1.Secret, error) {
		return m.client.CoreV1().Secrets(namespace).Get(ctx, source.SecretName, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err) && optional:
		secret = &corev1.Secret{}
	case apierrors.IsNotFound(err):
		return nil, apierrors.NewNotFound(corev1.Resource("secret"), source.SecretName)
	case err != nil:
		return nil, err
	}
	return secretPayload(secret, source.Items, defaultMode, optional)
}
