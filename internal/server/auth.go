package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/nodelet/nodelet/api/config/v1alpha1"
)

// AuthOptions decide who may use the node's API, as the kubelet's
// authentication and authorization settings do.
type AuthOptions struct {
	// ClientCAFile holds the CAs whose client certificates authenticate
	// as their CN, in the groups of their O (the API server's kubelet
	// client certificate among them); read again when it changes. Empty:
	// no client certificate counts.
	ClientCAFile string
	// Anonymous lets requests without credentials in as system:anonymous,
	// authorised like any other user; off, they get 401.
	Anonymous bool
	// TokenWebhook checks bearer tokens with a TokenReview, and remembers
	// the answer for TokenCacheTTL.
	TokenWebhook  bool
	TokenCacheTTL time.Duration
	// AuthorizationMode is v1alpha1.AuthorizationModeWebhook (a
	// SubjectAccessReview per request, answers remembered for
	// AuthorizedTTL or UnauthorizedTTL) or AuthorizationModeAlwaysAllow.
	AuthorizationMode string
	AuthorizedTTL     time.Duration
	UnauthorizedTTL   time.Duration
}

// Validate checks the options.
func (o AuthOptions) Validate() error {
	switch o.AuthorizationMode {
	case v1alpha1.AuthorizationModeWebhook, v1alpha1.AuthorizationModeAlwaysAllow:
	default:
		return fmt.Errorf("authorization mode must be %s or %s, not %q", v1alpha1.AuthorizationModeWebhook, v1alpha1.AuthorizationModeAlwaysAllow, o.AuthorizationMode)
	}
	return nil
}

// userInfo is an authenticated user.
type userInfo struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

const (
	anonymousUser       = "system:anonymous"
	unauthenticatedGrp  = "system:unauthenticated"
	authenticatedGroup  = "system:authenticated"
	authCacheSize       = 1024
	webhookCallsTimeout = 10 * time.Second
)

// errNoCredentials is an authentication that found nothing to check.
var errNoCredentials = errors.New("no client certificate or bearer token")

// authenticator tells who sent a request: a client certificate signed by a
// trusted CA first, then a bearer token through a TokenReview, then, if
// allowed, anonymous.
type authenticator struct {
	// clientCAs is the client CA file's latest certificates, nil without
	// one; caReloader reads the file again when it changes.
	clientCAs  atomic.Pointer[x509.CertPool]
	caReloader *fileReloader
	tokens     authenticationclient.TokenReviewInterface
	tokenCache *expiringCache
	tokenTTL   time.Duration
	anonymous  bool
}

func newAuthenticator(opts AuthOptions, tokens authenticationclient.TokenReviewInterface, clk clock.PassiveClock, log logr.Logger) (*authenticator, error) {
	a := &authenticator{anonymous: opts.Anonymous, tokenTTL: opts.TokenCacheTTL}
	if opts.ClientCAFile != "" {
		a.caReloader = newFileReloader("client CA", []string{opts.ClientCAFile}, func(files [][]byte) error {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(files[0]) {
				return errors.New("it holds no certificate")
			}
			a.clientCAs.Store(pool)
			return nil
		}, log)
		if _, err := a.caReloader.check(); err != nil {
			return nil, err
		}
	}
	if opts.TokenWebhook {
		a.tokens = tokens
		a.tokenCache = newExpiringCache(authCacheSize, clk)
	}
	return a, nil
}

// start watches the client CA file, until ctx ends.
func (a *authenticator) start(ctx context.Context, clk clock.WithTicker) {
	if a.caReloader != nil {
		go a.caReloader.run(ctx, clk, reloadResyncPeriod)
	}
}

// authenticate returns the request's user, or an error saying why there is
// none (errNoCredentials when nothing was presented).
func (a *authenticator) authenticate(r *http.Request) (*userInfo, error) {
	var errs []error
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		user, err := a.fromCertificate(r.TLS.PeerCertificates)
		if err == nil {
			return withAuthenticatedGroup(user), nil
		}
		errs = append(errs, err)
	}
	if token, ok := bearerToken(r); ok {
		user, err := a.fromToken(r.Context(), token)
		if err == nil {
			return withAuthenticatedGroup(user), nil
		}
		errs = append(errs, err)
	}
	if a.anonymous {
		return &userInfo{Name: anonymousUser, Groups: []string{unauthenticatedGrp}}, nil
	}
	if len(errs) == 0 {
		return nil, errNoCredentials
	}
	return nil, errors.Join(errs...)
}

// fromCertificate verifies a client certificate chain against the client
// CAs: the user is the certificate's CN, its groups the O values.
func (a *authenticator) fromCertificate(chain []*x509.Certificate) (*userInfo, error) {
	roots := a.clientCAs.Load()
	if roots == nil {
		return nil, errors.New("no client CA is configured to verify client certificates")
	}
	intermediates := x509.NewCertPool()
	for _, cert := range chain[1:] {
		intermediates.AddCert(cert)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: intermediates,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("verifying the client certificate of %q: %w", chain[0].Subject.CommonName, err)
	}
	if chain[0].Subject.CommonName == "" {
		return nil, errors.New("the client certificate has no common name")
	}
	return &userInfo{
		Name:   chain[0].Subject.CommonName,
		Groups: slices.Clone(chain[0].Subject.Organization),
	}, nil
}

// withAuthenticatedGroup puts every authenticated user in
// system:authenticated, as the API server does.
func withAuthenticatedGroup(user *userInfo) *userInfo {
	if slices.Contains(user.Groups, authenticatedGroup) {
		return user
	}
	withGroup := *user
	withGroup.Groups = append(slices.Clone(user.Groups), authenticatedGroup)
	return &withGroup
}

// tokenResult is a remembered TokenReview answer.
type tokenResult struct {
	user *userInfo
	err  error
}

// fromToken asks the API server who a bearer token belongs to. Answers, yes
// or no, are remembered for the cache TTL, keyed by the token's hash;
// failures to ask are not.
func (a *authenticator) fromToken(ctx context.Context, token string) (*userInfo, error) {
	if a.tokens == nil {
		return nil, errors.New("bearer tokens are not checked (token webhook off)")
	}
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	if cached, ok := a.tokenCache.get(key); ok {
		result := cached.(tokenResult)
		return result.user, result.err
	}
	ctx, cancel := context.WithTimeout(ctx, webhookCallsTimeout)
	defer cancel()
	review, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{
		Spec: authenticationv1.TokenReviewSpec{Token: token},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("reviewing a bearer token: %w", err)
	}
	result := tokenResult{err: fmt.Errorf("the bearer token is not valid: %s", review.Status.Error)}
	if review.Status.Authenticated {
		u := review.Status.User
		user := &userInfo{Name: u.Username, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			user.Extra = map[string][]string{}
			for k, v := range u.Extra {
				user.Extra[k] = v
			}
		}
		result = tokenResult{user: user}
	}
	a.tokenCache.set(key, result, a.tokenTTL)
	return result.user, result.err
}

func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// attributes is what a request asks to do to the Node, in the API's
// terms: a verb on a subresource of nodes/<name>.
type attributes struct {
	Verb        string
	Subresource string
}

// requestAttributes maps a request to the Node subresources that may
// allow it, in order, as the kubelet does (with its fine-grained
// authorization, GA in 1.36): /stats, /metrics and /logs have their own
// subresource, /pods, /healthz and /configz theirs or proxy, and
// everything else (logs of containers, exec, attach, port-forward, run)
// needs nodes/proxy. The verb comes from the HTTP method, except on the
// streaming endpoints.
//
// Exec, attach, port-forward and run are always create, whatever the
// method: a WebSocket client opens them with GET, and the kubelet v1.36
// takes the verb from the method there too, so on its port the
// `get nodes/proxy` that reading metrics or pods through the proxy needs
// is a shell in every container of the node. The API server has checked
// create for pods/exec, attach and portforward since 1.35
// (AuthorizePodWebsocketUpgradeCreatePermission); a client that calls the
// node's port directly meets only the node's own check, which nodelet
// makes stricter than the kubelet's.
func requestAttributes(method, path string) []attributes {
	verb := ""
	switch method {
	case http.MethodGet, http.MethodHead:
		verb = "get"
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	if isStreamingPath(path) {
		verb = "create"
	}
	var subresources []string
	switch {
	case isSubpath(path, "/pods"), isSubpath(path, "/runningpods"):
		subresources = []string{"pods", "proxy"}
	case isSubpath(path, "/healthz"):
		subresources = []string{"healthz", "proxy"}
	case isSubpath(path, "/configz"):
		subresources = []string{"configz", "proxy"}
	case isSubpath(path, "/stats"):
		subresources = []string{"stats"}
	case isSubpath(path, "/metrics"):
		subresources = []string{"metrics"}
	case isSubpath(path, "/logs"):
		subresources = []string{"log"}
	case isSubpath(path, "/checkpoint"):
		subresources = []string{"checkpoint"}
	default:
		subresources = []string{"proxy"}
	}
	attrs := make([]attributes, 0, len(subresources))
	for _, s := range subresources {
		attrs = append(attrs, attributes{Verb: verb, Subresource: s})
	}
	return attrs
}

// isStreamingPath tells whether path is one of the endpoints that run
// commands in containers or reach into them.
func isStreamingPath(path string) bool {
	return isSubpath(path, "/exec") || isSubpath(path, "/attach") ||
		isSubpath(path, "/portForward") || isSubpath(path, "/run")
}

// isSubpath tells whether path is root or below it.
func isSubpath(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+"/")
}

// authorizer decides whether a user may act on the Node.
type authorizer struct {
	nodeName string
	reviews  authorizationclient.SubjectAccessReviewInterface
	cache    *expiringCache
	// allowAll is the AlwaysAllow mode.
	allowAll        bool
	authorizedTTL   time.Duration
	unauthorizedTTL time.Duration
}

func newAuthorizer(opts AuthOptions, nodeName string, reviews authorizationclient.SubjectAccessReviewInterface, clk clock.PassiveClock) *authorizer {
	return &authorizer{
		nodeName:        nodeName,
		reviews:         reviews,
		cache:           newExpiringCache(authCacheSize, clk),
		allowAll:        opts.AuthorizationMode == v1alpha1.AuthorizationModeAlwaysAllow,
		authorizedTTL:   opts.AuthorizedTTL,
		unauthorizedTTL: opts.UnauthorizedTTL,
	}
}

// authorize asks a SubjectAccessReview whether user may do attrs to the
// Node. Answers are remembered, yes for the authorized TTL and no for the
// unauthorized one; failures to ask are not.
func (z *authorizer) authorize(ctx context.Context, user *userInfo, attrs attributes) (bool, error) {
	if z.allowAll {
		return true, nil
	}
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   user.Name,
		UID:    user.UID,
		Groups: user.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb:        attrs.Verb,
			Version:     "v1",
			Resource:    "nodes",
			Subresource: attrs.Subresource,
			Name:        z.nodeName,
		},
	}
	for k, v := range user.Extra {
		if spec.Extra == nil {
			spec.Extra = map[string]authorizationv1.ExtraValue{}
		}
		spec.Extra[k] = v
	}
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return false, err
	}
	key := string(keyBytes)
	if allowed, ok := z.cache.get(key); ok {
		return allowed.(bool), nil
	}
	ctx, cancel := context.WithTimeout(ctx, webhookCallsTimeout)
	defer cancel()
	review, err := z.reviews.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("reviewing access of %q to nodes/%s: %w", user.Name, attrs.Subresource, err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := z.unauthorizedTTL
	if allowed {
		ttl = z.authorizedTTL
	}
	z.cache.set(key, allowed, ttl)
	return allowed, nil
}

// expiringCache remembers up to a size of answers, each for its own time.
type expiringCache struct {
	entries *lru.Cache
	clock   clock.PassiveClock
}

type expiringEntry struct {
	value   any
	expires time.Time
}

func newExpiringCache(size int, clk clock.PassiveClock) *expiringCache {
	return &expiringCache{entries: lru.New(size), clock: clk}
}

func (c *expiringCache) get(key string) (any, bool) {
	v, ok := c.entries.Get(key)
	if !ok {
		return nil, false
	}
	entry := v.(expiringEntry)
	if !c.clock.Now().Before(entry.expires) {
		c.entries.Remove(key)
		return nil, false
	}
	return entry.value, true
}

func (c *expiringCache) set(key string, value any, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.entries.Add(key, expiringEntry{value: value, expires: c.clock.Now().Add(ttl)})
}
