package server

// The node log query's parsing, validation and journalctl arguments, and
// the /logs/ handler over a log folder in t.TempDir(); no journal (the
// service cases fall back to files, as on a node without journald).

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNodeLogQueryValidationIsTheKubelets(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "messages"), []byte("boot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		query     string
		parseErr  string
		invalid   string
		noRequest bool
	}{
		"no parameters: a plain file request": {query: "", noRequest: true},
		"a service":                           {query: "query=kubelet&tailLines=10&pattern=error&boot=-1"},
		"a file":                              {query: "query=/messages"},
		"blank query":                         {query: "query=%20%20", parseErr: "may not be empty"},
		"a bad time":                          {query: "query=kubelet&sinceTime=yesterday", parseErr: "invalid time format"},
		"a bad tailLines":                     {query: "query=kubelet&tailLines=ten", parseErr: "tailLines"},
		"options without a query":             {query: "tailLines=5", invalid: "cannot be empty with options"},
		"a service with a shell character":    {query: "query=kubelet%3Brm", invalid: "unsupported characters"},
		"five services":                       {query: "query=a&query=b&query=c&query=d&query=e", invalid: "must have at most 4 items"},
		"a file and a service":                {query: "query=/messages&query=kubelet", invalid: "cannot specify a file and service"},
		"a file with options":                 {query: "query=/messages&tailLines=3", invalid: "cannot specify file with options"},
		"a file outside the folder":           {query: "query=../../etc/shadow", invalid: "query"},
		"a file that is not there":            {query: "query=/nothing", invalid: "query"},
		"until before since":                  {query: "query=kubelet&sinceTime=2026-12-08T10:00:00Z&untilTime=2026-12-08T09:00:00Z", invalid: "must be after `sinceTime`"},
		"a later boot":                        {query: "query=kubelet&boot=1", invalid: "must be less than 1"},
		"too many lines":                      {query: "query=kubelet&tailLines=100001", invalid: "must be between 0 and 100000"},
		"a bad pattern":                       {query: "query=kubelet&pattern=(", invalid: "pattern"},
	} {
		values, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		q, err := parseNodeLogQuery(values)
		if tc.parseErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.parseErr) {
				t.Errorf("%s: parse error %v, want one saying %q", name, err, tc.parseErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if tc.noRequest != (q == nil) {
			t.Errorf("%s: query %+v, want none: %v", name, q, tc.noRequest)
			continue
		}
		if q == nil {
			continue
		}
		err = q.validate(dir)
		switch {
		case tc.invalid == "" && err != nil:
			t.Errorf("%s: %v, want valid", name, err)
		case tc.invalid != "" && (err == nil || !strings.Contains(err.Error(), tc.invalid)):
			t.Errorf("%s: %v, want invalid with %q", name, err, tc.invalid)
		}
	}
}

func TestJournalctlArgs(t *testing.T) {
	since := time.Date(2026, 12, 8, 1, 2, 3, 0, time.FixedZone("CET", 3600))
	q := &nodeLogQuery{since: &since, tailLines: ptrTo(20), pattern: "fail", boot: ptrTo(-1)}
	got := q.journalctlArgs([]string{"containerd", "kubelet"})
	want := []string{"--utc", "--no-pager", "--output=short-precise", "--since=2026-12-8 00:2:3",
		"--pager-end", "--lines=20", "--unit=containerd", "--unit=kubelet", "--grep=fail", "--boot", "-1"}
	if !slices.Equal(got, want) {
		t.Errorf("journalctl %q, want %q", got, want)
	}
}

func ptrTo(n int) *int { return &n }

func TestNodeLogsHandler(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"messages": "hello from messages\n", "app/app.log": "hello from app\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	get := func(h http.Handler, target string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body)
	}
	query := nodeLogsHandler(NodeLogsOptions{Enabled: true, Query: true, Dir: dir})
	for _, tc := range []struct {
		target   string
		wantCode int
		wantBody string
	}{
		{"/logs/messages", 200, "hello from messages"},
		{"/logs/", 200, `href="messages"`},
		{"/logs/?query=/messages", 200, "hello from messages"},
		// No journal here: a service's logs come from its file.
		{"/logs/?query=app", 200, "hello from app"},
		{"/logs/?query=nothing", 200, "log not found for nothing"},
		{"/logs/app?query=app", http.StatusNotAcceptable, "path not allowed in query mode"},
		{"/logs/?query=app&boot=1", http.StatusNotAcceptable, "must be less than 1"},
		{"/logs/?query=app&tailLines=x", http.StatusBadRequest, "tailLines"},
	} {
		if code, body := get(query, tc.target); code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
			t.Errorf("GET %s: %d %q, want %d with %q", tc.target, code, body, tc.wantCode, tc.wantBody)
		}
	}
	// Without the query, as the kubelet's default: files alone.
	files := nodeLogsHandler(NodeLogsOptions{Enabled: true, Dir: dir})
	if code, body := get(files, "/logs/?query=app"); code != 200 || !strings.Contains(body, `href="messages"`) {
		t.Errorf("GET /logs/?query=app without the query enabled: %d %q, want the folder's listing", code, body)
	}
	disabled := nodeLogsHandler(NodeLogsOptions{})
	if code, body := get(disabled, "/logs/messages"); code != http.StatusMethodNotAllowed || !strings.Contains(body, "logs endpoint is disabled.") {
		t.Errorf("GET /logs/messages with the handler off: %d %q", code, body)
	}
}
