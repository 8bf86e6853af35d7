package volume

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// Service account tokens for CSI drivers (the CSIDriver's tokenRequests),
// as the kubelet gives them: on each NodePublishVolume, a token of the
// pod's service account for each audience the driver asks for, bound to
// the pod, requested through TokenRequest as nodelet requests projected
// tokens (as the node, which the Node authorizer lets request tokens for
// its own pods only). Tokens are held for the pod and handed out again
// until they are due (token.go: 80% of their lifetime, at most a day), so
// republishing (requiresRepublish) refreshes them without asking the API
// server for a token at every call.

// csiTokenKey names a token held for one of a pod's CSI drivers.
type csiTokenKey struct {
	audience string
	seconds  int64
}

// csiRepublishPeriod is how often a driver with requiresRepublish is
// called again: at every volume resync (Options.SyncPeriod, 40 s by
// default), as the kubelet republishes at its periodic pod sync (a
// minute).
func (m *Manager) csiRepublishPeriod() time.Duration {
	if m.syncPeriod > 0 {
		return m.syncPeriod
	}
	return DefaultSyncPeriod
}

// csiTokensFor is the tokens attribute for the driver's tokenRequests
// (empty for none): a token held for the pod is reused until due, and
// one whose refresh failed is kept until it expires, as the kubelet's
// token manager keeps it.
func (m *Manager) csiTokensFor(ctx context.Context, pod *corev1.Pod, requests []storagev1.TokenRequest, now time.Time) (string, error) {
	if len(requests) == 0 {
		return "", nil
	}
	out := make(map[string]authenticationv1.TokenRequestStatus, len(requests))
	for _, r := range requests {
		source := &corev1.ServiceAccountTokenProjection{Audience: r.Audience, ExpirationSeconds: r.ExpirationSeconds}
		key := csiTokenKey{audience: r.Audience, seconds: *tokenRequest(pod, source).Spec.ExpirationSeconds}
		held := m.heldCSIToken(pod.UID, key)
		if held == nil || !now.Before(held.refreshAt()) {
			fresh, err := m.requestToken(ctx, pod, source, now)
			switch {
			case err == nil:
				held = fresh
				m.holdCSIToken(pod.UID, key, fresh)
				m.log.V(2).Info("Requested service account token for a CSI driver", "pod", klog.KObj(pod), "audience", r.Audience, "refreshAt", fresh.refreshAt())
			case held != nil && !held.expired(now):
				m.log.Error(err, "Kept the current service account token for a CSI driver after a failed refresh", "pod", klog.KObj(pod), "audience", r.Audience)
			default:
				return "", fmt.Errorf("failed to fetch token for audience %q: %w", r.Audience, err)
			}
		}
		out[r.Audience] = authenticationv1.TokenRequestStatus{Token: held.value, ExpirationTimestamp: metav1.NewTime(held.expiresAt)}
	}
	return csiTokensAttribute(out)
}

func (m *Manager) heldCSIToken(uid types.UID, key csiTokenKey) *token {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.csiTokens[uid][key]
}

func (m *Manager) holdCSIToken(uid types.UID, key csiTokenKey, t *token) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.csiTokens == nil {
		m.csiTokens = map[types.UID]map[csiTokenKey]*token{}
	}
	if m.csiTokens[uid] == nil {
		m.csiTokens[uid] = map[csiTokenKey]*token{}
	}
	m.csiTokens[uid][key] = t
}
