package kubeletmetrics

import "github.com/prometheus/client_golang/prometheus"

// SLIRegistry holds the health checks' service level indicators, which
// the node's API serves on /metrics/slis, as every Kubernetes component
// does.
var SLIRegistry = prometheus.NewRegistry()

// HealthcheckHealthz is the type label of the checks behind /healthz.
const HealthcheckHealthz = "healthz"

var (
	// Healthcheck is each check's last result: 1 healthy, 0 not.
	Healthcheck = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "kubernetes",
		Name:      "healthcheck",
		Help:      "This metric records the result of a single healthcheck.",
	}, []string{"name", "type"})
	// HealthchecksTotal counts each check's results.
	HealthchecksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "kubernetes",
		Name:      "healthchecks_total",
		Help:      "This metric records the results of all healthcheck.",
	}, []string{"name", "type", "status"})
)

func init() {
	SLIRegistry.MustRegister(Healthcheck, HealthchecksTotal)
}

// ObserveHealthcheck records one run of the check name of type kind.
func ObserveHealthcheck(name, kind string, err error) {
	healthy, status := 1.0, "success"
	if err != nil {
		healthy, status = 0, "error"
	}
	Healthcheck.WithLabelValues(name, kind).Set(healthy)
	HealthchecksTotal.WithLabelValues(name, kind, status).Inc()
}
