package criproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-client/pkg/fake"
)

// These tests run the proxy in front of an in-process fake CRI server: the
// stateful CRI fake of k8s.io/cri-api/pkg/apis/testing served over gRPC
// by k8s.io/cri-client/pkg/fake, with a GetContainerEvents that streams.

// streamingRuntime is the fake with a GetContainerEvents that sends three
// events (the fake's own ends the stream at once).
type streamingRuntime struct{ *fake.RemoteRuntime }

func (streamingRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	for i := range 3 {
		if err := stream.Send(&runtimeapi.ContainerEventResponse{ContainerId: string(rune('a' + i))}); err != nil {
			return err
		}
	}
	return nil
}

type rig struct {
	fake    *fake.RemoteRuntime
	proxy   *Proxy
	runtime runtimeapi.RuntimeServiceClient
	images  runtimeapi.ImageServiceClient
}

// newRig starts the fake runtime and the proxy in front of it, each on a
// socket in a short temporary folder (unix socket paths are limited to
// 108 bytes), and a client of the proxy.
func newRig(t *testing.T, seed uint64) *rig {
	t.Helper()
	dir, err := os.MkdirTemp("", "criproxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	runtime := fake.NewFakeRemoteRuntime()
	server := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(server, streamingRuntime{runtime})
	runtimeapi.RegisterImageServiceServer(server, runtime)
	listener, err := net.Listen("unix", filepath.Join(dir, "runtime.sock"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)

	proxy, err := New("unix://"+filepath.Join(dir, "runtime.sock"), seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := proxy.Serve(filepath.Join(dir, "proxy.sock")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "proxy.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rig{fake: runtime, proxy: proxy, runtime: runtimeapi.NewRuntimeServiceClient(conn), images: runtimeapi.NewImageServiceClient(conn)}
}

func sandboxConfig(name string) *runtimeapi.RunPodSandboxRequest {
	return &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "ns", Uid: "uid-" + name},
	}}
}

func TestProxyForwardsUntouchedWithoutFaults(t *testing.T) {
	r := newRig(t, 1)
	ctx := t.Context()

	version, err := r.runtime.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil || version.RuntimeName == "" {
		t.Fatalf("Version through the proxy: %v, %v", version, err)
	}
	run, err := r.runtime.RunPodSandbox(ctx, sandboxConfig("a"))
	if err != nil {
		t.Fatalf("RunPodSandbox through the proxy: %v", err)
	}
	list, err := r.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Id != run.PodSandboxId {
		t.Fatalf("ListPodSandbox through the proxy = %v, %v; want the one sandbox %s", list, err, run.PodSandboxId)
	}
	if _, err := r.images.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}}); err != nil {
		t.Fatalf("PullImage through the proxy: %v", err)
	}
	if got := r.fake.ImageService.Images; len(got) != 1 {
		t.Errorf("the runtime holds %d images after one pull through the proxy, want 1", len(got))
	}
	events, err := r.runtime.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(events); len(got.ids) != 3 || got.err != nil {
		t.Errorf("GetContainerEvents through the proxy gave %v then %v, want 3 events then the end", got.ids, got.err)
	}
	if faults, calls := r.proxy.Counts(); len(faults) != 0 || calls != 5 {
		t.Errorf("Counts() = %v, %d calls; want no fault in 5 calls", faults, calls)
	}
}

func TestProxyInjectsErrorsBeforeAndAfterTheRuntime(t *testing.T) {
	r := newRig(t, 7)
	r.proxy.SetRules([]Rule{{Method: "RunPodSandbox", ErrorRate: 1}})
	r.proxy.Enable(true)
	ctx := t.Context()

	const calls = 40
	for i := range calls {
		_, err := r.runtime.RunPodSandbox(ctx, sandboxConfig(string(rune('a'+i))))
		if code := status.Code(err); !slices.Contains(DefaultCodes, code) {
			t.Fatalf("RunPodSandbox with an error rate of 1 gave %v, want one of %v", err, DefaultCodes)
		}
	}
	// Other methods are not named by the rule.
	list, err := r.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatalf("ListPodSandbox, which no rule names: %v", err)
	}
	faults, _ := r.proxy.Counts()
	if faults[KindError]+faults[KindLostReply] != calls || faults[KindError] == 0 || faults[KindLostReply] == 0 {
		t.Fatalf("Counts() = %v; want %d errors, some before the runtime and some after", faults, calls)
	}
	// A lost reply is a sandbox the runtime made that the caller never
	// heard of; an error before is none.
	if len(list.Items) != faults[KindLostReply] {
		t.Errorf("the runtime holds %d sandboxes after %d lost replies", len(list.Items), faults[KindLostReply])
	}

	r.proxy.Enable(false)
	if _, err := r.runtime.RunPodSandbox(ctx, sandboxConfig("after")); err != nil {
		t.Errorf("RunPodSandbox with the faults switched off: %v", err)
	}
}

func TestProxyStallsACallPastItsDeadline(t *testing.T) {
	r := newRig(t, 3)
	r.proxy.SetRules([]Rule{{Method: "runtime.v1.ImageService", DelayRate: 1, MaxDelay: time.Hour}})
	r.proxy.Enable(true)

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := r.images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("ListImages stalled for up to an hour with a 200ms deadline gave %v, want DeadlineExceeded", err)
	}
	if _, err := r.runtime.Version(t.Context(), &runtimeapi.VersionRequest{}); err != nil {
		t.Errorf("Version, of the runtime service no rule names: %v", err)
	}
	if faults, _ := r.proxy.Counts(); faults[KindDelay] != 1 {
		t.Errorf("Counts() = %v, want 1 delay", faults)
	}
}

func TestProxyDropsAStreamAfterItsFirstMessage(t *testing.T) {
	r := newRig(t, 5)
	r.proxy.SetRules([]Rule{{Method: "*", DropRate: 1}})
	r.proxy.Enable(true)

	events, err := r.runtime.GetContainerEvents(t.Context(), &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := receiveAll(events)
	if len(got.ids) != 1 || status.Code(got.err) != codes.Unavailable {
		t.Errorf("a dropped GetContainerEvents gave %v then %v, want 1 event then Unavailable", got.ids, got.err)
	}
	// A unary call has no second message to cut.
	if _, err := r.runtime.Version(t.Context(), &runtimeapi.VersionRequest{}); err != nil {
		t.Errorf("Version with a drop rate of 1: %v", err)
	}
}

func TestProxyRefusesOtherServices(t *testing.T) {
	r := newRig(t, 1)
	conn, err := grpc.NewClient("unix://"+r.proxy.listener.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Invoke(t.Context(), "/runtime.v1alpha2.RuntimeService/Version", &runtimeapi.VersionRequest{}, &runtimeapi.VersionResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("a v1alpha2 call gave %v, want Unimplemented", err)
	}
}

type received struct {
	ids []string
	err error
}

func receiveAll(stream runtimeapi.RuntimeService_GetContainerEventsClient) received {
	var got received
	for {
		event, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			got.err = err
			return got
		}
		got.ids = append(got.ids, event.ContainerId)
	}
}
