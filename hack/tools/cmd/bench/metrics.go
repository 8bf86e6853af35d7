package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// criServicePrefix names the CRI's gRPC services (RuntimeService and
// ImageService of runtime.v1) in containerd's grpc_server_* metrics.
const criServicePrefix = "runtime.v1."

// grpcHandled scrapes a containerd metrics endpoint and returns
// grpc_server_handled_total per "service/method", every code added up.
func grpcHandled(ctx context.Context, addr string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v1/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("scraping containerd metrics at %s: %w", addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping containerd metrics at %s: %w", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping containerd metrics at %s: %s", addr, resp.Status)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing containerd metrics from %s: %w", addr, err)
	}
	counts := map[string]float64{}
	family, ok := families["grpc_server_handled_total"]
	if !ok {
		return counts, nil
	}
	for _, metric := range family.GetMetric() {
		var service, method string
		for _, label := range metric.GetLabel() {
			switch label.GetName() {
			case "grpc_service":
				service = label.GetValue()
			case "grpc_method":
				method = label.GetValue()
			}
		}
		counts[service+"/"+method] += metric.GetCounter().GetValue()
	}
	return counts, nil
}

// criCallsBetween returns the CRI calls served between two scrapes, in all
// and per method (only the methods that were called).
func criCallsBetween(before, after map[string]float64) (total float64, perMethod map[string]float64) {
	perMethod = map[string]float64{}
	for key, value := range after {
		if !strings.HasPrefix(key, criServicePrefix) {
			continue
		}
		if delta := value - before[key]; delta > 0 {
			perMethod[strings.TrimPrefix(key, criServicePrefix)] = delta
			total += delta
		}
	}
	return total, perMethod
}
