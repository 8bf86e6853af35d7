package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the bench counts by.
type auditEvent struct {
	AuditID string `json:"auditID"`
	Verb    string `json:"verb"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// requestKey names a request by verb and resource, e.g. "patch pods/status".
func (e auditEvent) requestKey() string {
	if e.ObjectRef == nil {
		return e.Verb
	}
	resource := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		resource += "/" + e.ObjectRef.Subresource
	}
	return e.Verb + " " + resource
}

// auditWindow is a stretch of the bench whose API requests by one user are
// counted: the requests the API server received in [Start, End].
type auditWindow struct {
	User  string
	Start time.Time
	End   time.Time
	// Counts is filled by countRequests.
	Counts *requestCounts
}

func newAuditWindow(user string, start, end time.Time) *auditWindow {
	return &auditWindow{User: user, Start: start, End: end, Counts: &requestCounts{ByKey: map[string]int{}}}
}

// requestCounts are the API requests one agent made in a window.
type requestCounts struct {
	Total int            `json:"total"`
	ByKey map[string]int `json:"byRequest"`
}

func (c *requestCounts) add(key string) {
	if c.ByKey == nil {
		c.ByKey = map[string]int{}
	}
	c.Total++
	c.ByKey[key]++
}

// countRequests reads the API server's audit log once, with the backups
// it rotated out (audit-<time>.log beside it), and fills each window's
// counts. A request is counted once (long-running ones are logged at
// ResponseStarted and ResponseComplete under one audit ID).
func countRequests(path string, windows []*auditWindow) error {
	ext := filepath.Ext(path)
	backups, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return fmt.Errorf("finding the audit log's backups: %w", err)
	}
	users := map[string]bool{}
	for _, w := range windows {
		users[w.User] = true
	}
	seen := map[string]bool{}
	for _, file := range append(backups, path) {
		if err := countRequestsIn(file, windows, users, seen); err != nil {
			return err
		}
	}
	return nil
}

func countRequestsIn(path string, windows []*auditWindow, users, seen map[string]bool) error {
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		// Most lines are the control plane's; skip them unparsed.
		if !bytes.Contains(line, []byte(`"system:node:`)) {
			continue
		}
		var event auditEvent
		if err := json.Unmarshal(line, &event); err != nil {
			continue // a line cut by rotation
		}
		if !users[event.User.Username] || seen[event.AuditID] {
			continue
		}
		seen[event.AuditID] = true
		for _, w := range windows {
			if w.User == event.User.Username && !event.RequestReceivedTimestamp.Before(w.Start) && !event.RequestReceivedTimestamp.After(w.End) {
				w.Counts.add(event.requestKey())
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	return nil
}
