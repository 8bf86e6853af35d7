package server

// The kernel's pressure files parsed, a table of files as Linux writes
// them, before and after 5.13, and of damaged ones.

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestParsePSI(t *testing.T) {
	zeros := "avg10=0.00 avg60=0.00 avg300=0.00 total=0"
	tests := map[string]struct {
		file    string
		want    *statsapi.PSIStats
		wantErr string
	}{
		"a cgroup's memory.pressure": {
			file: "some avg10=1.50 avg60=0.75 avg300=0.25 total=123456\nfull avg10=0.50 avg60=0.25 avg300=0.05 total=4567\n",
			want: &statsapi.PSIStats{
				Some: statsapi.PSIData{Avg10: 1.5, Avg60: 0.75, Avg300: 0.25, Total: 123456},
				Full: statsapi.PSIData{Avg10: 0.5, Avg60: 0.25, Avg300: 0.05, Total: 4567},
			},
		},
		"cpu.pressure before Linux 5.13: no full line": {
			file: "some avg10=100.00 avg60=12.34 avg300=0.01 total=18446744073709551615\n",
			want: &statsapi.PSIStats{Some: statsapi.PSIData{Avg10: 100, Avg60: 12.34, Avg300: 0.01, Total: 18446744073709551615}},
		},
		"the machine's cpu.pressure since 5.13: a full line of zeros": {
			file: "some avg10=0.02 avg60=0.01 avg300=0.00 total=99\nfull " + zeros + "\n",
			want: &statsapi.PSIStats{Some: statsapi.PSIData{Avg10: 0.02, Avg60: 0.01, Total: 99}},
		},
		"keys in another order, no final newline": {
			file: "full total=7 avg300=0.03 avg60=0.02 avg10=0.01\nsome total=8 avg300=0.30 avg60=0.20 avg10=0.10",
			want: &statsapi.PSIStats{
				Some: statsapi.PSIData{Avg10: 0.1, Avg60: 0.2, Avg300: 0.3, Total: 8},
				Full: statsapi.PSIData{Avg10: 0.01, Avg60: 0.02, Avg300: 0.03, Total: 7},
			},
		},
		"what a later kernel may add is skipped": {
			file: "some " + zeros + " avg1=3.00\nfull " + zeros + "\npeak avg10=x\n\n",
			want: &statsapi.PSIStats{},
		},
		"empty":                           {file: "", wantErr: "no some line"},
		"irq.pressure's shape: full only": {file: "full " + zeros + "\n", wantErr: "no some line"},
		"a field without a value":         {file: "some avg10 avg60=0.00 avg300=0.00 total=0\n", wantErr: `its some line: "avg10" is not key=value`},
		"no total":                        {file: "some avg10=0.00 avg60=0.00 avg300=0.00\n", wantErr: "its some line: no total"},
		"no averages":                     {file: "full total=1\nsome " + zeros + "\n", wantErr: "its full line: no avg10, avg300, avg60"},
		"a word for an average":           {file: "some avg10=high avg60=0.00 avg300=0.00 total=0\n", wantErr: "avg10=high is not a percentage"},
		"NaN, which JSON cannot carry":    {file: "some avg10=NaN avg60=0.00 avg300=0.00 total=0\n", wantErr: "avg10=NaN is not a percentage"},
		"a negative average":              {file: "some avg10=0.00 avg60=-1.00 avg300=0.00 total=0\n", wantErr: "avg60=-1.00 is not a percentage"},
		"over 100%":                       {file: "some avg10=0.00 avg60=0.00 avg300=100.01 total=0\n", wantErr: "avg300=100.01 is not a percentage"},
		"a negative total":                {file: "some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n", wantErr: "total=-1"},
		"a total past 64 bits":            {file: "some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n", wantErr: "total=18446744073709551616"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parsePSI([]byte(tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("parsePSI() = %+v, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("parsePSI() (-want +got):\n%s", diff)
			}
		})
	}
}
