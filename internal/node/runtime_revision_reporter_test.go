package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelet/nodelet/internal/testutil/await"
	"github.com/nodelet/nodelet/internal/testutil/testenv"
)

// TestRuntimeOutOfDateAgainstAPIServer runs the reporter against a real API
// server (envtest), the CRI fake of k8s.io/cri-api/pkg/apis/testing and a
// real revision file, and client-go's FakeRecorder for the events: the
// runtime's record naming another image sets RuntimeOutOfDate True with a
// Warning event; the record of a runtime started again with the wanted
// revision sets it False with a Normal one.
func TestRuntimeOutOfDateAgainstAPIServer(t *testing.T) {
	cfg := testenv.StartAPIServer(t)
	const nodeName = "node-with-an-old-runtime"
	fakeRuntime := critest.NewFakeRuntimeService()
	fakeRuntime.FakeStatus = &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		{Type: runtimeapi.NetworkReady, Status: true},
	}}
	revisionFile := filepath.Join(t.TempDir(), RuntimeRevisionFile)
	if err := os.WriteFile(revisionFile, []byte(revisionV1+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recorder := record.NewFakeRecorder(10)

	mgr, err := manager.New(cfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	reporter, err := NewNodeStatusReporter(mgr.GetClient(), mgr.GetAPIReader(), fakeRuntime, NodeStatusOptions{
		NodeName:        nodeName,
		NodeIPs:         []string{"127.0.0.1"},
		RootDir:         t.TempDir(),
		UpdateFrequency: 200 * time.Millisecond,
		Machine: func() (MachineInfo, error) {
			return MachineInfo{MilliCPUs: 1000, MemoryBytes: 1 << 30, EphemeralStorageBytes: 10 << 30}, nil
		},
		RuntimeRevision:     revisionV2,
		RuntimeRevisionFile: revisionFile,
		Recorder:            recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(reporter); err != nil {
		t.Fatal(err)
	}
	ctx := testenv.RunManager(t, mgr)
	admin, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conditionIs := func(status corev1.ConditionStatus, reason, message string) func(context.Context) error {
		return func(context.Context) error {
			node := &corev1.Node{}
			if err := admin.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
				return err
			}
			c := findNodeCondition(&node.Status, NodeRuntimeOutOfDate)
			if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
				return fmt.Errorf("RuntimeOutOfDate is %+v", c)
			}
			return nil
		}
	}
	// The next RuntimeOutOfDate event; the other conditions' (from
	// registering) are not this test's.
	nextEvent := func(want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case got := <-recorder.Events:
				if strings.HasPrefix(got, "Normal Node") {
					continue
				}
				if !strings.HasPrefix(got, want) {
					t.Errorf("event %q, want one starting %q", got, want)
				}
				return
			case <-deadline:
				t.Errorf("no event, want %q", want)
				return
			}
		}
	}

	// Registered with the condition: no transition of a Node's to tell.
	await.Eventually(t, 30*time.Second, "RuntimeOutOfDate True, naming both images",
		conditionIs(corev1.ConditionTrue, ReasonRuntimeRevisionDiffers, "image registry.example/nodelet:v1 where registry.example/nodelet:v2 is wanted"))

	// The runtime's pod replaced: its new record is the wanted revision.
	if err := os.WriteFile(revisionFile, []byte(revisionV2+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "RuntimeOutOfDate False", conditionIs(corev1.ConditionFalse, ReasonRuntimeUpToDate, ""))
	nextEvent("Normal RuntimeUpToDate the runtime runs the revision its deployment wants")

	// A later upgrade's runtime, not yet replaced.
	if err := os.WriteFile(revisionFile, []byte("image=registry.example/nodelet:v2,config=c0,pod=p1"), 0o644); err != nil {
		t.Fatal(err)
	}
	await.Eventually(t, 30*time.Second, "RuntimeOutOfDate True, for the configuration",
		conditionIs(corev1.ConditionTrue, ReasonRuntimeRevisionDiffers, "another configuration"))
	nextEvent("Warning RuntimeOutOfDate the runtime's pod was started with another configuration")
}
