// Package server is the node's HTTPS API, the kubelet's port 10250: the
// API server reaches it for `kubectl logs`, `exec`, `attach`,
// `port-forward` and `top`, and monitoring reads its metrics and stats.
//
// Every request is authenticated (a client certificate signed by the
// client CA, or a bearer token through a TokenReview) and authorised with a
// SubjectAccessReview on the Node's subresources, as the kubelet's webhook
// mode does, but for the streams, which need create whatever the method
// (see requestAttributes). Exec, attach and port-forward are the
// runtime's own streaming endpoints, proxied: nodelet asks CRI for the
// stream's URL and relays the upgraded connection, whatever protocol the
// client speaks with the runtime.
package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelet/nodelet/internal/kubeletmetrics"
)

// Options are the server's settings.
type Options struct {
	// NodeName is the Node whose subresources requests are authorised on.
	NodeName string
	// Address and Port are where the server listens (the kubelet's
	// --address and --port).
	Address string
	Port    int
	TLS     TLSOptions
	Auth    AuthOptions
	// RootDir is the file system whose usage /stats/summary reports as
	// the node's.
	RootDir string
	// Logs is what /logs/ serves.
	Logs NodeLogsOptions
}

// Config is the server's settings and what it serves from.
type Config struct {
	Options
	// Client reviews tokens and access, and requests the serving
	// certificate.
	Client kubernetes.Interface
	// Pods reads the Pods bound to this node (the manager's cache).
	Pods client.Reader
	// Runtime and Images are the container runtime.
	Runtime cri.RuntimeService
	Images  cri.ImageManagerService
	// Healthz reports nodelet's health for /healthz; nil is healthy.
	Healthz func() error
	// Metrics are nodelet's own metrics, for /metrics.
	Metrics prometheus.Gatherer
	// Configz is nodelet's effective configuration, served on /configz as
	// {"nodeletconfig": Configz}, the shape of the kubelet's
	// {"kubeletconfig": ...}; nil serves nothing there.
	Configz any
	// ProbeMetrics are the probe metrics, for /metrics/probes.
	ProbeMetrics prometheus.Gatherer
	// SLIMetrics are the health checks' indicators, for /metrics/slis.
	SLIMetrics prometheus.Gatherer
	// Volumes measures the pods' volumes for /stats/summary; nil reports
	// none.
	Volumes VolumeStats
	// Cgroups locates the node's and the pods' cgroups, whose pressure
	// stall information /stats/summary reports; nil reports none.
	Cgroups Cgroups
	// NodeIPs are the node's addresses, for the serving certificate.
	NodeIPs func() []string
	Clock   clock.WithTicker
	Log     logr.Logger
}

// Server serves the node's API.
type Server struct {
	cfg     Config
	authn   *authenticator
	authz   *authorizer
	cert    *servingCertificate
	stats   *statsProvider
	handler http.Handler
	log     logr.Logger
}

// New builds the server: its certificate (generated or loaded now, or
// requested once started), its authentication and its routes.
func New(cfg Config) (*Server, error) {
	if err := cfg.Auth.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	authn, err := newAuthenticator(cfg.Auth, cfg.Client.AuthenticationV1().TokenReviews(), cfg.Clock, cfg.Log.WithName("authentication"))
	if err != nil {
		return nil, err
	}
	cert, err := newServingCertificate(cfg.TLS, cfg.NodeName, cfg.NodeIPs, cfg.Client, cfg.Log.WithName("certificate"))
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:   cfg,
		authn: authn,
		authz: newAuthorizer(cfg.Auth, cfg.NodeName, cfg.Client.AuthorizationV1().SubjectAccessReviews(), cfg.Clock),
		cert:  cert,
		stats: newStatsProvider(cfg.NodeName, cfg.RootDir, cfg.Runtime, cfg.Images, cfg.Clock),
		log:   cfg.Log,
	}
	s.stats.volumes = cfg.Volumes
	s.stats.cgroups = cfg.Cgroups
	s.handler = s.withAuth(s.routes())
	return s, nil
}

// NeedLeaderElection is false: every node serves its own API.
func (s *Server) NeedLeaderElection() bool { return false }

// Handler is the server's whole handler, authentication included.
func (s *Server) Handler() http.Handler { return s.handler }

// Start serves until ctx ends, then closes the listener; streams under way
// end with the process.
func (s *Server) Start(ctx context.Context) error {
	addr := net.JoinHostPort(s.cfg.Address, strconv.Itoa(s.cfg.Port))
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	return s.serve(ctx, listener)
}

// serve serves TLS on listener until ctx ends.
func (s *Server) serve(ctx context.Context, listener net.Listener) error {
	addr := listener.Addr().String()
	s.cert.start(ctx, s.cfg.Clock)
	s.authn.start(ctx, s.cfg.Clock)
	server := &http.Server{
		Handler: s.handler,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.cert.get,
			// Client certificates are verified by the authenticator, so
			// that a request with an unknown one can still use a token.
			ClientAuth: tls.RequestClientCert,
			// Streams upgrade the connection, which HTTP/2 cannot.
			NextProtos: []string{"http/1.1"},
		},
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	s.log.Info("Serving the node's API", "address", listener.Addr().String())
	done := make(chan error, 1)
	go func() { done <- server.ServeTLS(listener, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("serving the node's API on %s: %w", addr, err)
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdownCtx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// routes are the node's endpoints, as the kubelet names them.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	if s.cfg.Configz != nil {
		mux.HandleFunc("GET /configz", s.serveConfigz)
	}
	mux.HandleFunc("GET /pods", s.servePods)
	mux.HandleFunc("GET /pods/", s.servePods)
	mux.HandleFunc("GET /runningpods", s.serveRunningPods)
	mux.HandleFunc("GET /runningpods/", s.serveRunningPods)
	mux.Handle("GET /metrics", s.metricsHandler())
	mux.Handle("GET /metrics/resource", s.resourceMetricsHandler())
	mux.Handle("GET /metrics/probes", s.probeMetricsHandler())
	mux.Handle("GET /metrics/slis", gathererHandler(s.cfg.SLIMetrics))
	mux.Handle("GET /metrics/cadvisor", s.cadvisorMetricsHandler())
	mux.HandleFunc("GET /stats/summary", s.serveStatsSummary)
	mux.Handle("GET /logs/", nodeLogsHandler(s.cfg.Logs))
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", s.serveContainerLogs)
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{container}", s.serveExec)
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{uid}/{container}", s.serveExec)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{container}", s.serveAttach)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{uid}/{container}", s.serveAttach)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", s.servePortForward)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", s.servePortForward)
	}
	mux.HandleFunc("POST /checkpoint/{namespace}/{pod}/{container}", s.serveCheckpoint)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{container}", s.serveRun)
	mux.HandleFunc("POST /run/{namespace}/{pod}/{uid}/{container}", s.serveRun)
	return mux
}

// withAuth lets a request through once it is authenticated and one of the
// Node subresources it maps to is allowed, answering as the kubelet does
// otherwise: 401 Unauthorized, 403 Forbidden naming what was refused, 500
// when access could not be reviewed.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log := s.log.WithValues("method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		user, err := s.authn.authenticate(r)
		if err != nil {
			log.V(1).Info("Refused an unauthenticated request", "err", err.Error())
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		log = log.WithValues("user", user.Name)
		attrs := requestAttributes(r.Method, r.URL.Path)
		var subresources []string
		for _, a := range attrs {
			subresources = append(subresources, a.Subresource)
			allowed, err := s.authz.authorize(r.Context(), user, a)
			if err != nil {
				log.Error(err, "Failed to authorise a request", "verb", a.Verb, "subresource", a.Subresource)
				http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", user.Name, a.Verb, a.Subresource), http.StatusInternalServerError)
				return
			}
			if allowed {
				log.V(2).Info("Serving a request")
				next.ServeHTTP(w, r.WithContext(klog.NewContext(r.Context(), log)))
				return
			}
		}
		log.V(1).Info("Refused a forbidden request", "subresources", subresources)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", user.Name, attrs[0].Verb, subresources), http.StatusForbidden)
	})
}

func (s *Server) serveConfigz(w http.ResponseWriter, r *http.Request) {
	body, err := json.Marshal(map[string]any{"nodeletconfig": s.cfg.Configz})
	if err != nil {
		http.Error(w, "marshalling the configuration: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (s *Server) serveHealthz(w http.ResponseWriter, r *http.Request) {
	kubeletmetrics.ObserveHealthcheck("ping", kubeletmetrics.HealthcheckHealthz, nil)
	if s.cfg.Healthz != nil {
		// The kubelet's name for the check that its loop keeps up: here
		// the PLEG's relists, which drive the reconciles.
		err := s.cfg.Healthz()
		kubeletmetrics.ObserveHealthcheck("syncloop", kubeletmetrics.HealthcheckHealthz, err)
		if err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok"))
}
