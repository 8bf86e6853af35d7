package main

import (
	"flag"
	"strings"
	"testing"
)

func TestParseOptions(t *testing.T) {
	valid := []string{"--service-account=nodelet-system:nodelet", "--daemonset=nodelet-system/nodelet", "--leader-election-namespace=nodelet-system"}
	for name, tc := range map[string]struct {
		args []string
		// wantErr is a part of the error; empty when the arguments are valid.
		wantErr string
	}{
		"the chart's arguments":                {args: valid},
		"a lifetime of ten minutes, the least": {args: append(valid, "--max-expiration-seconds=600")},
		"no DaemonSet":                         {args: valid[:1], wantErr: "--daemonset"},
		"a DaemonSet without its namespace":    {args: append(valid, "--daemonset=nodelet"), wantErr: "want NAMESPACE/NAME"},
		"a DaemonSet in another namespace than its ServiceAccount": {
			args: append(valid, "--daemonset=default/nodelet"), wantErr: "not in the namespace of --service-account",
		},
		"a lifetime the API server refuses": {args: append(valid, "--max-expiration-seconds=599"), wantErr: "less than 600"},
		"no suffix":                         {args: append(valid, "--node-name-suffix="), wantErr: "must not be empty"},
	} {
		t.Run(name, func(t *testing.T) {
			opts, err := parseOptions(tc.args, flag.NewFlagSet("log", flag.ContinueOnError))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("parseOptions(%q): %v", tc.args, err)
				}
				if opts.daemonSet != "nodelet-system/nodelet" || opts.maxExpirationSeconds < 600 {
					t.Errorf("options %+v", opts)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseOptions(%q) = %v, want an error saying %q", tc.args, err, tc.wantErr)
			}
		})
	}
}
