package kubeletmetrics

import (
	"crypto/tls"
	"crypto/x509"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestClientCertificateTTLIsTheSecondsToExpiry(t *testing.T) {
	now := time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)
	cert := &tls.Certificate{Leaf: &x509.Certificate{NotAfter: now.Add(90*time.Minute + 500*time.Millisecond)}}
	for name, tc := range map[string]struct {
		cert *tls.Certificate
		want float64
	}{
		"valid":             {cert, 5400},
		"expired":           {&tls.Certificate{Leaf: &x509.Certificate{NotAfter: now.Add(-time.Minute)}}, -60},
		"none yet":          {nil, math.Inf(1)},
		"not parsed (Leaf)": {&tls.Certificate{}, math.Inf(1)},
	} {
		if got := CertificateTTLSeconds(tc.cert, now); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestClientCertificateTTLGaugeReadsTheSource(t *testing.T) {
	if got := testutil.ToFloat64(ClientCertificateTTL); !math.IsInf(got, 1) && clientCertificate.Load() == nil {
		t.Errorf("without a source: %v, want +Inf", got)
	}
	expiry := time.Now().Add(time.Hour)
	SetClientCertificateSource(func() *tls.Certificate { return &tls.Certificate{Leaf: &x509.Certificate{NotAfter: expiry}} })
	if got := testutil.ToFloat64(ClientCertificateTTL); got < 3500 || got > 3600 {
		t.Errorf("an hour from expiry: %v s", got)
	}
}
