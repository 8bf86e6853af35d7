package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"time"
)

// NodeLogsOptions choose what /logs/ serves, as the kubelet's
// enableSystemLogHandler and enableSystemLogQuery.
type NodeLogsOptions struct {
	// Enabled serves Dir's files on /logs/.
	Enabled bool
	// Query takes the node log query's parameters on /logs/.
	Query bool
	// Dir is the node's log folder; empty is /var/log.
	Dir string
}

const (
	// The limits the kubelet puts on a query.
	maxLogTailLines      = 100000
	maxLogServiceLength  = 256
	maxLogServices       = 4
	nodeLogQueryDeadline = 30 * time.Second
	// journalctl's --since/--until layout, in UTC.
	journalDateLayout = "2006-1-2 15:4:5"
)

// logServiceUnsafe is what a service name may not hold: it becomes an
// argument of journalctl.
var logServiceUnsafe = regexp.MustCompile(`[^a-zA-Z\-_.:0-9@]+`)

// nodeLogQuery is a parsed /logs/?query=... request.
type nodeLogQuery struct {
	services, files []string
	since, until    *time.Time
	tailLines, boot *int
	pattern         string
}

func (q *nodeLogQuery) hasOptions() bool {
	return q.since != nil || q.until != nil || q.tailLines != nil || q.boot != nil || q.pattern != ""
}

// parseNodeLogQuery reads the query's parameters as the kubelet does: a
// query holding a slash names a file, any other a service. nil, nil: no
// query parameters at all, a plain file request.
func parseNodeLogQuery(values url.Values) (*nodeLogQuery, error) {
	var q nodeLogQuery
	var errs []error
	queries, given := values["query"]
	for _, v := range queries {
		switch {
		case strings.ContainsAny(v, `/\`):
			q.files = append(q.files, v)
		case strings.TrimSpace(v) != "":
			q.services = append(q.services, v)
		}
	}
	if given && len(q.files) == 0 && len(q.services) == 0 {
		errs = append(errs, fmt.Errorf("query: Invalid value: %q: may not be empty", queries))
	}
	parseTime := func(name string) *time.Time {
		v := values.Get(name)
		if v == "" {
			return nil
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: Invalid value: %q: invalid time format", name, v))
			return nil
		}
		return &t
	}
	parseInt := func(name string) *int {
		v := values.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: Invalid value: %q: %w", name, v, err))
			return nil
		}
		return &n
	}
	q.since, q.until = parseTime("sinceTime"), parseTime("untilTime")
	q.boot, q.tailLines = parseInt("boot"), parseInt("tailLines")
	q.pattern = values.Get("pattern")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if !given && !q.hasOptions() {
		return nil, nil
	}
	return &q, nil
}

// validate checks the query against the kubelet's rules; a file must be
// within logDir.
func (q *nodeLogQuery) validate(logDir string) error {
	var errs []error
	for _, s := range q.services {
		switch {
		case len(s) > maxLogServiceLength:
			errs = append(errs, fmt.Errorf("query: Invalid value: %q: length must be less than %d", s, maxLogServiceLength))
		case logServiceUnsafe.MatchString(s):
			errs = append(errs, fmt.Errorf("query: Invalid value: %q: input contains unsupported characters", s))
		}
	}
	if len(q.services) > maxLogServices {
		errs = append(errs, fmt.Errorf("query: Too many: %d: must have at most %d items", len(q.services), maxLogServices))
	}
	switch {
	case len(q.files) == 0 && len(q.services) == 0:
		errs = append(errs, errors.New("query: Required value: cannot be empty with options"))
	case len(q.files) > 0 && len(q.services) > 0:
		errs = append(errs, fmt.Errorf("query: Invalid value: \"%v, %v\": cannot specify a file and service", q.files, q.services))
	case len(q.files) > 1:
		errs = append(errs, fmt.Errorf("query: Invalid value: %q: cannot specify more than one file", q.files))
	case len(q.files) == 1 && q.hasOptions():
		errs = append(errs, fmt.Errorf("query: Invalid value: %q: cannot specify file with options", q.files))
	case len(q.files) == 1:
		if err := statInRoot(logDir, strings.TrimPrefix(q.files[0], "/")); err != nil {
			errs = append(errs, fmt.Errorf("query: Invalid value: %q: %w", q.files, err))
		}
	}
	if q.since != nil && q.until != nil && q.since.After(*q.until) {
		errs = append(errs, fmt.Errorf("untilTime: Invalid value: %q: must be after `sinceTime`", q.until.Format(time.RFC3339)))
	}
	if q.boot != nil && *q.boot > 0 {
		errs = append(errs, fmt.Errorf("boot: Invalid value: %d: must be less than 1", *q.boot))
	}
	if q.tailLines != nil && (*q.tailLines < 0 || *q.tailLines > maxLogTailLines) {
		errs = append(errs, fmt.Errorf("tailLines: Invalid value: %d: must be between 0 and %d, inclusive", *q.tailLines, maxLogTailLines))
	}
	if _, err := syntax.Parse(q.pattern, syntax.Perl); err != nil {
		errs = append(errs, fmt.Errorf("pattern: Invalid value: %q: %w", q.pattern, err))
	}
	return errors.Join(errs...)
}

// statInRoot stats name within root, refusing a path that leaves it. A
// file query's leading slash is the log folder's root, as the kubelet's
// documentation writes them (query=/kubelet.log).
func statInRoot(root, name string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	_, err = r.Stat(name)
	return err
}

// journalctlArgs are journalctl's arguments for the query's services.
func (q *nodeLogQuery) journalctlArgs(services []string) []string {
	args := []string{"--utc", "--no-pager", "--output=short-precise"}
	if q.since != nil {
		args = append(args, "--since="+q.since.UTC().Format(journalDateLayout))
	}
	if q.until != nil {
		args = append(args, "--until="+q.until.UTC().Format(journalDateLayout))
	}
	if q.tailLines != nil {
		args = append(args, "--pager-end", fmt.Sprintf("--lines=%d", *q.tailLines))
	}
	for _, s := range services {
		args = append(args, "--unit="+s)
	}
	if q.pattern != "" {
		args = append(args, "--grep="+q.pattern)
	}
	if q.boot != nil {
		args = append(args, "--boot", strconv.Itoa(*q.boot))
	}
	return args
}

// nodeLogsHandler serves /logs/: the log folder's files, and with Query
// the node log query, as the kubelet's.
func nodeLogsHandler(opts NodeLogsOptions) http.Handler {
	if !opts.Enabled {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "logs endpoint is disabled.", http.StatusMethodNotAllowed)
		})
	}
	dir := opts.Dir
	if dir == "" {
		dir = "/var/log"
	}
	files := http.FileServer(http.Dir(dir))
	return http.StripPrefix("/logs/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !opts.Query {
			files.ServeHTTP(w, r)
			return
		}
		q, err := parseNodeLogQuery(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if q == nil {
			files.ServeHTTP(w, r)
			return
		}
		if r.URL.Path != "/" && r.URL.Path != "" {
			http.Error(w, "path not allowed in query mode", http.StatusNotAcceptable)
			return
		}
		if err := q.validate(dir); err != nil {
			http.Error(w, err.Error(), http.StatusNotAcceptable)
			return
		}
		if len(q.files) == 1 {
			r.URL.Path = filepath.ToSlash(q.files[0])
			files.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
		ctx, cancel := context.WithTimeout(r.Context(), nodeLogQueryDeadline)
		defer cancel()
		q.copyServiceLogs(ctx, w, dir)
	}))
}

// copyServiceLogs writes the services' logs: from the journal for a
// unit journald knows, else from the log folder's <service>,
// <service>.log or <service>/<service>.log, as the kubelet guesses.
func (q *nodeLogQuery) copyServiceLogs(ctx context.Context, w io.Writer, dir string) {
	units := journalUnits(ctx)
	var journal, inFiles []string
	for _, s := range q.services {
		if units[s+".service"] {
			journal = append(journal, s)
		} else {
			inFiles = append(inFiles, s)
		}
	}
	if len(journal) > 0 {
		cmd := exec.CommandContext(ctx, "journalctl", q.journalctlArgs(journal)...)
		cmd.Stdout, cmd.Stderr = w, w
		var exitErr *exec.ExitError
		if err := cmd.Run(); err != nil && !errors.As(err, &exitErr) {
			fmt.Fprintf(w, "\nerror: journal output not available\n")
		}
	}
	if len(inFiles) > 0 && q.hasOptions() {
		fmt.Fprintf(w, "\noptions present and query resolved to log files for %v\ntry without specifying options\n", inFiles)
		return
	}
	for _, s := range inFiles {
		copyServiceLogFile(w, dir, s)
	}
}

// journalUnits are the units journald holds logs of; none where there
// is no journal.
func journalUnits(ctx context.Context) map[string]bool {
	out, err := exec.CommandContext(ctx, "journalctl", "--field", "_SYSTEMD_UNIT").Output()
	if err != nil {
		return nil
	}
	units := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		units[strings.TrimSpace(line)] = true
	}
	return units
}

func copyServiceLogFile(w io.Writer, dir, service string) {
	var err error
	for _, name := range []string{service, service + ".log", service + "/" + service + ".log"} {
		if err = copyFileInRoot(w, dir, name); !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(w, "\nlog not found for %s\n", service)
	case err != nil:
		fmt.Fprintf(w, "\nerror getting log for %s: %v\n", service, err)
	}
}

// copyFileInRoot copies the file name within root; a folder counts as
// missing.
func copyFileInRoot(w io.Writer, root, name string) error {
	f, err := os.OpenInRoot(root, name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.IsDir() {
		return os.ErrNotExist
	}
	_, err = io.Copy(w, f)
	return err
}
