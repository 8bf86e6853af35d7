package node

// ParseTaints and a companion Node's registration: a pure table test, and
// TestCompanionRegistration against a real API server (envtest, with the
// CRI fake from k8s.io/cri-api/pkg/apis/testing).

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

func TestParseTaints(t *testing.T) {
	tests := map[string]struct {
		spec    string
		want    []corev1.Taint
		wantErr string
	}{
		"nothing is no taint": {spec: "", want: nil},
		"a key and an effect": {
			spec: "nodelet.dev/companion:NoSchedule",
			want: []corev1.Taint{{Key: "nodelet.dev/companion", Effect: corev1.TaintEffectNoSchedule}},
		},
		"several, with values and every effect": {
			spec: "a=1:NoSchedule,example.com/b=x:PreferNoSchedule,c=:NoExecute",
			want: []corev1.Taint{
				{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule},
				{Key: "example.com/b", Value: "x", Effect: corev1.TaintEffectPreferNoSchedule},
				{Key: "c", Effect: corev1.TaintEffectNoExecute},
			},
		},
		"one key with two effects is two taints": {
			spec: "a:NoSchedule,a:NoExecute",
			want: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Effect: corev1.TaintEffectNoExecute}},
		},
		"no effect":                   {spec: "a=1", wantErr: "want <key>=<value>:<effect>"},
		"an unknown effect":           {spec: "a=1:NoRun", wantErr: `unsupported taint effect "NoRun"`},
		"two colons":                  {spec: "a:b:NoSchedule", wantErr: "invalid taint spec"},
		"two equals":                  {spec: "a=b=c:NoSchedule", wantErr: "invalid taint spec"},
		"a key that is not a name":    {spec: "bad key:NoSchedule", wantErr: "invalid taint spec"},
		"an empty key":                {spec: "=1:NoSchedule", wantErr: "invalid taint spec"},
		"a value that is no label":    {spec: "a=not valid:NoSchedule", wantErr: "invalid taint spec"},
		"a trailing comma":            {spec: "a:NoSchedule,", wantErr: "invalid taint spec"},
		"the same key and effect":     {spec: "a=1:NoSchedule,a=2:NoSchedule", wantErr: "duplicated taints with the same key and effect"},
		"the removal form of kubectl": {spec: "a:NoSchedule-", wantErr: "unsupported taint effect"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseTaints(tc.spec)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseTaints(%q) error = %v, want one containing %q", tc.spec, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTaints(%q): %v", tc.spec, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseTaints(%q) mismatch (-want +got):\n%s", tc.spec, diff)
			}
			if again, err := ParseTaints(FormatTaints(got)); err != nil || !cmp.Equal(again, got) {
				t.Errorf("ParseTaints(FormatTaints(%v)) = %v, %v; want the same taints", got, again, err)
			}
		})
	}
}

func TestNewNodeCarriesTheRegistrationLabels(t *testing.T) {
	facts := nodeTestFacts()
	facts.labels = map[string]string{
		corev1.LabelTopologyZone: "zone-a",
		// The Node's own labels are nodelet's to set.
		corev1.LabelHostname: "other", "nodelet.dev/agent": "other",
	}
	got := newNode("host-a-nodelet", "host-a", facts, readyRuntimeState(nodeT0), nodeT0)
	want := map[string]string{
		"kubernetes.io/hostname":      "host-a",
		"kubernetes.io/os":            goruntime.GOOS,
		"kubernetes.io/arch":          goruntime.GOARCH,
		"nodelet.dev/agent":           "nodelet",
		"topology.kubernetes.io/zone": "zone-a",
	}
	if diff := cmp.Diff(want, got.Labels); diff != "" {
		t.Errorf("newNode() labels mismatch (-want +got):\n%s", diff)
	}
}

func TestNewNodeCarriesTheRegistrationTaints(t *testing.T) {
	facts := nodeTestFacts()
	facts.taints = []corev1.Taint{{Key: "nodelet.dev/companion", Effect: corev1.TaintEffectNoSchedule}}
	got := newNode("node-a", "host-a", facts, readyRuntimeState(nodeT0), nodeT0)
	if diff := cmp.Diff(facts.taints, got.Spec.Taints); diff != "" {
		t.Errorf("newNode() taints mismatch (-want +got):\n%s", diff)
	}
	facts.taints[0].Key = "changed"
	if got.Spec.Taints[0].Key != "nodelet.dev/companion" {
		t.Errorf("newNode() shares its taints with the facts")
	}
}

// TestCompanionRegistration: a new Node gets the taints; a Node that
// exists keeps its own, as the kubelet leaves an administrator's removal
// of a registration taint alone, and its labels but for the kubelet's
// default ones (hostname, zone), set again as the kubelet sets them when
// it starts. A companion's capacity is its pod's share of the machine;
// its hostname and zone labels are its host's.
func TestCompanionRegistration(t *testing.T) {
	cfg := testenv.StartAPIServer(t)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	companion := corev1.Taint{Key: "nodelet.dev/companion", Effect: corev1.TaintEffectNoSchedule}
	existing := &corev1.Node{}
	existing.Name = "registered-before"
	adminTaints := []corev1.Taint{{Key: "admin", Value: "kept", Effect: corev1.TaintEffectNoExecute}}
	existing.Spec.Taints = slices.Clone(adminTaints)
	existing.Labels = map[string]string{corev1.LabelHostname: "host-old", corev1.LabelTopologyZone: "zone-old", "admin": "kept"}
	if err := admin.Create(context.Background(), existing); err != nil {
		t.Fatal(err)
	}

	mgr, err := manager.New(cfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	fakeRuntime := critest.NewFakeRuntimeService()
	podShare := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	for _, name := range []string{"registered-now", existing.Name} {
		reporter, err := NewNodeStatusReporter(mgr.GetClient(), mgr.GetAPIReader(), fakeRuntime, NodeStatusOptions{
			NodeName:           name,
			NodeIPs:            []string{"127.0.0.1"},
			RootDir:            t.TempDir(),
			RegisterWithTaints: []corev1.Taint{companion},
			Hostname:           "host-a",
			Labels:             map[string]string{corev1.LabelTopologyZone: "zone-a"},
			Machine: func() (MachineInfo, error) {
				machine := MachineInfo{MilliCPUs: 8000, MemoryBytes: 32 << 30, EphemeralStorageBytes: 100 << 30}
				return machine.Within(podShare, 0), nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := mgr.Add(reporter); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testenv.RunManager(t, mgr)

	taintsOf := func(name string, want []corev1.Taint) func(context.Context) error {
		return func(context.Context) error {
			node := &corev1.Node{}
			if err := admin.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return err
			}
			// The status written is the sign the reporter looked at it.
			if len(node.Status.Conditions) == 0 {
				return fmt.Errorf("node %s has no status yet", name)
			}
			// The API server adds the not-ready taint to every new Node
			// (and the fake runtime never gets it Ready).
			var taints []corev1.Taint
			for _, taint := range node.Spec.Taints {
				if taint.Key != corev1.TaintNodeNotReady {
					taints = append(taints, taint)
				}
			}
			if diff := cmp.Diff(want, taints); diff != "" {
				return fmt.Errorf("node %s taints mismatch (-want +got):\n%s", name, diff)
			}
			return nil
		}
	}
	await.Eventually(t, 30*time.Second, "the new node tainted", taintsOf("registered-now", []corev1.Taint{companion}))
	await.Eventually(t, 30*time.Second, "the existing node's taints kept", taintsOf(existing.Name, adminTaints))

	node := &corev1.Node{}
	if err := admin.Get(ctx, client.ObjectKey{Name: "registered-now"}, node); err != nil {
		t.Fatal(err)
	}
	if got := node.Labels[corev1.LabelHostname] + " " + node.Labels[corev1.LabelTopologyZone]; got != "host-a zone-a" {
		t.Errorf("hostname and zone labels = %q, want the host's, %q", got, "host-a zone-a")
	}
	for _, list := range []corev1.ResourceList{node.Status.Capacity, node.Status.Allocatable} {
		if cpu, memory := list[corev1.ResourceCPU], list[corev1.ResourceMemory]; cpu.Cmp(podShare[corev1.ResourceCPU]) != 0 || memory.Cmp(podShare[corev1.ResourceMemory]) != 0 {
			t.Errorf("cpu, memory = %s, %s; want the pod's share 1500m, 2Gi", cpu.String(), memory.String())
		}
	}
	if err := admin.Get(ctx, client.ObjectKey{Name: existing.Name}, node); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-a", corev1.LabelOSStable: goruntime.GOOS, corev1.LabelArchStable: goruntime.GOARCH, "admin": "kept"}
	if diff := cmp.Diff(want, node.Labels); diff != "" {
		t.Errorf("the existing node's labels mismatch (-want +got):\n%s", diff)
	}
}
