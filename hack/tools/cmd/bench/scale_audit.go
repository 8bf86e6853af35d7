package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// countNodeRequests counts, for each window, the requests of every user
// named userPrefix..., added up, and how many such users made one.
func countNodeRequests(path, userPrefix string, windows []*scaleWindow) error {
	ext := filepath.Ext(path)
	backups, err := filepath.Glob(strings.TrimSuffix(path, ext) + "-*" + ext)
	if err != nil {
		return err
	}
	users := make([]map[string]bool, len(windows))
	for i, w := range windows {
		w.Requests = &requestCounts{ByKey: map[string]int{}}
		users[i] = map[string]bool{}
	}
	seen := map[string]bool{}
	err = scanAudit(append(backups, path), userPrefix, func(event auditEvent) {
		if seen[event.AuditID] {
			return
		}
		seen[event.AuditID] = true
		for i, w := range windows {
			if !event.RequestReceivedTimestamp.Before(w.start) && !event.RequestReceivedTimestamp.After(w.end) {
				w.Requests.add(event.requestKey())
				users[i][event.User.Username] = true
			}
		}
	})
	for i, w := range windows {
		w.NodeUsers = len(users[i])
	}
	return err
}

// scanAudit calls fn with each audit event of a user named prefix...
// in files, skipping the other users' lines unparsed.
func scanAudit(files []string, prefix string, fn func(auditEvent)) error {
	needle := []byte(`"username":"` + prefix)
	for _, path := range files {
		file, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("reading the audit log: %w", err)
		}
		scanner := bufio.NewScanner(file)
		scanner.Buffer(make([]byte, 1<<20), 16<<20)
		for scanner.Scan() {
			line := scanner.Bytes()
			if !bytes.Contains(line, needle) {
				continue
			}
			var event auditEvent
			if err := json.Unmarshal(line, &event); err != nil || !strings.HasPrefix(event.User.Username, prefix) {
				continue // a line cut by rotation
			}
			fn(event)
		}
		err = scanner.Err()
		file.Close()
		if err != nil {
			return fmt.Errorf("reading the audit log %s: %w", path, err)
		}
	}
	return nil
}

func parseMetrics(data []byte) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	return families, nil
}
