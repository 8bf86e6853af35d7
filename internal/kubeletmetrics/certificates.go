package kubeletmetrics

import (
	"crypto/tls"
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// clientCertificate is where the client certificate's TTL is read from:
// the node identity's certificate manager, once there is one.
var clientCertificate atomic.Pointer[func() *tls.Certificate]

var (
	// ClientCertificateTTL is what the mixin's "client certificate
	// expires soon" alerts read.
	ClientCertificateTTL = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Subsystem: kubeletSubsystem,
		Name:      "certificate_manager_client_ttl_seconds",
		Help: "Gauge of the TTL (time-to-live) of the Kubelet's client certificate. " +
			"The value is in seconds until certificate expiry (negative if already expired). " +
			"If client certificate is invalid or unused, the value will be +INF.",
	}, func() float64 {
		current := clientCertificate.Load()
		if current == nil {
			return math.Inf(1)
		}
		return CertificateTTLSeconds((*current)(), time.Now())
	})
	// ClientCertificateRenewErrors counts failed renewals of the client
	// certificate; the certificate manager increments it.
	ClientCertificateRenewErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: kubeletSubsystem,
		Subsystem: "certificate_manager",
		Name:      "client_expiration_renew_errors",
		Help:      "Counter of certificate renewal errors.",
	})
)

func init() {
	metrics.Registry.MustRegister(ClientCertificateTTL, ClientCertificateRenewErrors)
}

// SetClientCertificateSource makes the TTL gauge read current.
func SetClientCertificateSource(current func() *tls.Certificate) {
	clientCertificate.Store(&current)
}

// CertificateTTLSeconds is the whole seconds from now to cert's expiry,
// negative once expired, +Inf without a certificate.
func CertificateTTLSeconds(cert *tls.Certificate, now time.Time) float64 {
	if cert == nil || cert.Leaf == nil {
		return math.Inf(1)
	}
	return math.Trunc(cert.Leaf.NotAfter.Sub(now).Seconds())
}
