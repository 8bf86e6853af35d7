package server

import (
	"bytes"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// FuzzLogQuery reads any query of /containerLogs as the handler does:
// decoded, validated, turned into the reader's options. What passes
// validation reads from no later than now, with a positive limit.
func FuzzLogQuery(f *testing.F) {
	for _, seed := range []string{
		"",
		"container=app&follow=true&tailLines=10&timestamps=1",
		"sinceSeconds=60&limitBytes=100&stream=Stderr",
		"sinceTime=2026-01-01T00:00:00Z&previous=false&stream=All&tailLines=0",
		"sinceSeconds=9223372036854775807",
		"tailLines=-1&limitBytes=0&sinceSeconds=1&sinceTime=x&stream=both",
	} {
		f.Add(seed)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, rawQuery string) {
		query, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		opts, err := decodeLogOptions(query)
		if err != nil {
			return
		}
		if err := validateLogOptions(opts); err != nil {
			return
		}
		read := readOptions(opts, now)
		if read.Since.After(now) {
			t.Errorf("query %q reads since %v, after now %v", rawQuery, read.Since, now)
		}
		if opts.SinceSeconds != nil && !read.Since.Before(now) {
			t.Errorf("query %q with sinceSeconds %d reads since %v, not before now", rawQuery, *opts.SinceSeconds, read.Since)
		}
		if read.LimitBytes != nil && *read.LimitBytes < 1 {
			t.Errorf("query %q passed validation with limitBytes %d", rawQuery, *read.LimitBytes)
		}
		if read.TailLines != nil && *read.TailLines < 0 {
			t.Errorf("query %q passed validation with tailLines %d", rawQuery, *read.TailLines)
		}
		if opts.Stream != nil && *opts.Stream != corev1.LogStreamAll && opts.TailLines != nil {
			t.Errorf("query %q passed validation with both a stream and tailLines", rawQuery)
		}
	})
}

// FuzzStreamQuery reads any query of /exec, /attach, /run and
// /portForward: the streams asked for, and the ports.
func FuzzStreamQuery(f *testing.F) {
	for _, seed := range []string{
		"",
		"command=sh&input=1&output=1&tty=1",
		"error=1",
		"port=80&port=443,8080",
		"port=&port=0&port=65536&port=-1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		query, err := url.ParseQuery(rawQuery)
		if err != nil {
			return
		}
		if opts, err := parseStreamOptions(query); err == nil {
			if !opts.Stdin && !opts.Stdout && !opts.Stderr {
				t.Errorf("query %q asks for no stream, yet passed", rawQuery)
			}
			if opts.TTY && opts.Stderr {
				t.Errorf("query %q has stderr beside a TTY", rawQuery)
			}
		}
		ports, err := parsePorts(query)
		if err != nil {
			return
		}
		for _, p := range ports {
			if p < 1 || p > 65535 {
				t.Errorf("query %q gave port %d", rawQuery, p)
			}
		}
	})
}

// FuzzParsePSI reads any pressure file. What it reads came from a some
// line, has averages that are percentages, and marshals to JSON (a NaN
// would fail the whole /stats/summary).
func FuzzParsePSI(f *testing.F) {
	for _, seed := range []string{
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"some avg10=1.50 avg60=0.75 avg300=0.25 total=123456\n",
		"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"some avg10=NaN avg60=Inf avg300=-0 total=18446744073709551616\n",
		"some total=1 total=2 avg10=1e2 avg60=0x1p-2 avg300=.5 x=y\nfull\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		psi, err := parsePSI(data)
		if err != nil {
			return
		}
		if !bytes.Contains(data, []byte("some")) {
			t.Errorf("%q has no some line, yet parsed", data)
		}
		for _, d := range []statsapi.PSIData{psi.Some, psi.Full} {
			for _, average := range []float64{d.Avg10, d.Avg60, d.Avg300} {
				if !(average >= 0 && average <= 100) {
					t.Errorf("%q gave the average %v", data, average)
				}
			}
		}
		if _, err := json.Marshal(psi); err != nil {
			t.Errorf("%q gave what JSON cannot carry: %v", data, err)
		}
	})
}
