package volume

import (
	"context"
	"errors"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Service account tokens are refreshed as the kubelet's token manager
// refreshes them: once 80% of the requested lifetime has passed, and at
// least daily. The lifetime is the one asked for, not the one the API
// server answers with: with --service-account-extend-token-expiration the
// server makes tokens valid for a year, yet applications expect them to
// rotate on the requested schedule. All times are nodelet's own clock, so
// a skew with the API server's does not matter.
const (
	// defaultTokenExpirationSeconds is the API server's default for
	// serviceAccountToken.expirationSeconds.
	defaultTokenExpirationSeconds = 3600
	// maxTokenAge refreshes long-lived tokens daily.
	maxTokenAge = 24 * time.Hour
)

// token is a service account token nodelet holds for one source of one
// volume of one pod.
type token struct {
	value    string
	issuedAt time.Time
	// ttl is the lifetime requested.
	ttl time.Duration
	// expiresAt is when the API server says it expires (a CSI driver
	// is told).
	expiresAt time.Time
}

// refreshAt is when the token is due for replacement.
func (t *token) refreshAt() time.Time {
	age := t.ttl * 8 / 10
	if age > maxTokenAge {
		age = maxTokenAge
	}
	return t.issuedAt.Add(age)
}

// expired reports whether the token can no longer be handed out, even when
// a refresh fails.
func (t *token) expired(now time.Time) bool {
	return !now.Before(t.issuedAt.Add(t.ttl))
}

// tokenRequest is the TokenRequest for a serviceAccountToken source. The
// token is bound to the pod, as the Node authorizer requires of a node's
// requests and so that it dies with the pod.
func tokenRequest(pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	seconds := int64(defaultTokenExpirationSeconds)
	if source.ExpirationSeconds != nil {
		seconds = *source.ExpirationSeconds
	}
	var audiences []string
	if source.Audience != "" {
		audiences = []string{source.Audience}
	}
	return &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: &seconds,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.Name,
				UID:        pod.UID,
			},
		},
	}
}

// requestToken asks the API server for a new token for the pod's service
// account.
func (m *Manager) requestToken(ctx context.Context, pod *corev1.Pod, source *corev1.ServiceAccountTokenProjection, now time.Time) (*token, error) {
	serviceAccount := pod.Spec.ServiceAccountName
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	request := tokenRequest(pod, source)
	response, err := m.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, serviceAccount, request, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if response.Status.Token == "" {
		return nil, errors.New("the API server returned an empty token")
	}
	return &token{
		value:     response.Status.Token,
		issuedAt:  now,
		ttl:       time.Duration(*request.Spec.ExpirationSeconds) * time.Second,
		expiresAt: response.Status.ExpirationTimestamp.Time,
	}, nil
}
