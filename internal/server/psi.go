package server

// The kernel's pressure files, parsed: pure, the reading is pressure.go's.

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// parsePSI reads one of the kernel's pressure files
// (Documentation/accounting/psi.rst):
//
//	some avg10=0.12 avg60=0.05 avg300=0.01 total=123456
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// The averages are the share of time stalled, in percent, over the last
// 10, 60 and 300 seconds; total is the time stalled since boot in
// microseconds, kept as it is: the stats API says nanoseconds, but the
// kubelet passes on the kernel's figure unchanged (cAdvisor through runc's
// cgroups library), and so do the runtimes. cpu.pressure has no full line
// before Linux 5.13: its full is then zeros, as the kubelet's. Lines and
// keys a later kernel may add are skipped.
func parsePSI(data []byte) (*statsapi.PSIStats, error) {
	var psi statsapi.PSIStats
	var some bool
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var into *statsapi.PSIData
		switch fields[0] {
		case "some":
			into, some = &psi.Some, true
		case "full":
			into = &psi.Full
		default:
			continue
		}
		var err error
		if *into, err = parsePSIData(fields[1:]); err != nil {
			return nil, fmt.Errorf("its %s line: %w", fields[0], err)
		}
	}
	if !some {
		return nil, errors.New("no some line")
	}
	return &psi, nil
}

// parsePSIData reads the key=value fields of one line of a pressure file.
func parsePSIData(fields []string) (statsapi.PSIData, error) {
	var d statsapi.PSIData
	averages := map[string]*float64{"avg10": &d.Avg10, "avg60": &d.Avg60, "avg300": &d.Avg300}
	missing := map[string]bool{"avg10": true, "avg60": true, "avg300": true, "total": true}
	for _, field := range fields {
		key, value, ok := strings.Cut(field, "=")
		if !ok {
			return d, fmt.Errorf("%q is not key=value", field)
		}
		if average, ok := averages[key]; ok {
			v, err := strconv.ParseFloat(value, 64)
			// The kernel writes percentages: anything else (NaN, which
			// JSON cannot carry) is not its.
			if err != nil || !(v >= 0 && v <= 100) {
				return d, fmt.Errorf("%s=%s is not a percentage", key, value)
			}
			*average = v
		} else if key == "total" {
			v, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return d, fmt.Errorf("total=%s: %w", value, err)
			}
			d.Total = v
		} else {
			continue
		}
		delete(missing, key)
	}
	if len(missing) > 0 {
		return d, fmt.Errorf("no %s", strings.Join(slices.Sorted(maps.Keys(missing)), ", "))
	}
	return d, nil
}
