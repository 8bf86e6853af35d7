package chaos

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nodelet/nodelet/test/chaos/criproxy"
	"github.com/nodelet/nodelet/test/chaos/invariants"
	"github.com/nodelet/nodelet/test/chaos/schedule"
	"github.com/nodelet/nodelet/test/e2e"
)

// sampler reads nodelet's resident memory (/proc) and goroutines (its
// go_goroutines metric) every two seconds, and starts nodelet again when
// it exited on its own (a crash, which the run counts).
type sampler struct {
	peakRSS, rssAt5m               int64
	peakGoroutines, goroutinesAt5m int
	lastRSS                        int64
	lastGoroutines                 int
	crashes                        int
}

func (s *sampler) run(ctx context.Context, nodelet *e2e.Nodelet, metricsAddr string, rec *recorder) {
	start := time.Now()
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if err := nodelet.UnexpectedExit(); err != nil {
			s.crashes++
			rec.mark(invariants.Fault, fmt.Sprintf("nodelet exited on its own: %v", err))
			_ = nodelet.Start()
			continue
		}
		if rss := residentBytes(nodelet.PID()); rss > 0 {
			s.lastRSS, s.peakRSS = rss, max(s.peakRSS, rss)
		}
		if n := goroutines(ctx, metricsAddr); n > 0 {
			s.lastGoroutines, s.peakGoroutines = n, max(s.peakGoroutines, n)
		}
		if s.rssAt5m == 0 && time.Since(start) >= 5*time.Minute {
			s.rssAt5m, s.goroutinesAt5m = s.lastRSS, s.lastGoroutines
		}
	}
}

// residentBytes is VmRSS of /proc/PID/status, 0 when unknown.
func residentBytes(pid int) int64 {
	if pid == 0 {
		return 0
	}
	file, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		if value, ok := strings.CutPrefix(scanner.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// goroutines is nodelet's go_goroutines metric, 0 when unknown.
func goroutines(ctx context.Context, metricsAddr string) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		if value, ok := strings.CutPrefix(scanner.Text(), "go_goroutines "); ok {
			n, _ := strconv.ParseFloat(value, 64)
			return int(n)
		}
	}
	return 0
}

// figure is a run's summary, printed at its end.
type figure struct {
	seed           uint64
	duration       time.Duration
	faultsFor      time.Duration
	pods, kinds    int
	apiErrors      int
	faults         map[string]int
	criFaults      map[string]int
	criCalls       int
	evicted        int
	violations     int
	leaks          int
	crashes        int
	samples        *sampler
	convergedAfter time.Duration
	converge       time.Duration
}

func (f figure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos figure (seed %d, -duration %s; faults for %s)\n", f.seed, f.duration, f.faultsFor.Round(time.Second))
	row := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "  %-22s "+format+"\n", append([]any{name}, args...)...)
	}
	row("pods churned", "%d of %d kinds (%d API calls failed)", f.pods, f.kinds, f.apiErrors)
	row("faults injected", "%s", counts(f.faults, schedule.Names))
	row("CRI faults", "%s in %d calls", counts(f.criFaults, []string{criproxy.KindError, criproxy.KindLostReply, criproxy.KindDelay, criproxy.KindDrop}), f.criCalls)
	row("pods evicted", "%d", f.evicted)
	row("invariant violations", "%d", f.violations)
	row("leaks", "%d", f.leaks)
	row("nodelet crashes", "%d", f.crashes)
	row("nodelet RSS", "peak %d MiB, at the end %d MiB%s", f.samples.peakRSS>>20, f.samples.lastRSS>>20, at5m(f.samples.rssAt5m>>20, "MiB"))
	row("nodelet goroutines", "peak %d, at the end %d%s", f.samples.peakGoroutines, f.samples.lastGoroutines, at5m(int64(f.samples.goroutinesAt5m), ""))
	row("converged after", "%s (bound %s)", f.convergedAfter.Round(100*time.Millisecond), f.converge)
	return b.String()
}

func at5m(value int64, unit string) string {
	if value == 0 {
		return ""
	}
	return strings.TrimRight(fmt.Sprintf(", after 5m %d %s", value, unit), " ")
}

// counts prints each kind's count, the known kinds first in their order.
func counts(byKind map[string]int, order []string) string {
	var parts []string
	seen := map[string]bool{}
	for _, kind := range order {
		parts = append(parts, fmt.Sprintf("%s %d", kind, byKind[kind]))
		seen[kind] = true
	}
	var rest []string
	for kind := range byKind {
		if !seen[kind] {
			rest = append(rest, kind)
		}
	}
	sort.Strings(rest)
	for _, kind := range rest {
		parts = append(parts, fmt.Sprintf("%s %d", kind, byKind[kind]))
	}
	return strings.Join(parts, ", ")
}

// evictedPods counts the pods the trace saw evicted.
func evictedPods(trace []invariants.Event) int {
	evicted := map[string]bool{}
	for _, e := range trace {
		if e.Pod != nil && e.Pod.Status.Reason == invariants.EvictedReason {
			evicted[string(e.Pod.UID)] = true
		}
	}
	return len(evicted)
}
