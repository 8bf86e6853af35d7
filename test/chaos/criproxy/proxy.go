// Package criproxy is a CRI v1 proxy that injects faults: a gRPC server on
// a unix socket that forwards the RuntimeService and ImageService to the
// real runtime's socket and makes chosen calls fail, stall, lose their
// reply or have their stream cut, at given rates drawn from a seeded
// random source. The node agent under test is pointed at the proxy's
// socket; the faults can be switched on and off while it runs.
//
// It forwards messages as opaque frames, without decoding them, so every
// method of both services (and any added later) goes through unchanged.
package criproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// maxMessageSize is what the kubelet's CRI client allows (16 MiB): a list
// of many containers must go through whole.
const maxMessageSize = 16 << 20

// services are the gRPC services forwarded; any other call is refused.
var services = []string{"/runtime.v1.RuntimeService/", "/runtime.v1.ImageService/"}

// Proxy forwards CRI calls to a runtime and injects faults into them.
type Proxy struct {
	backend  *grpc.ClientConn
	server   *grpc.Server
	listener net.Listener

	mu      sync.Mutex
	rng     *rand.Rand
	rules   []Rule
	enabled bool
	counts  map[string]int
	calls   int
}

// New connects (lazily) to the runtime at endpoint (unix:///path) and
// seeds the faults' random source. Faults are off until SetRules and
// Enable.
func New(endpoint string, seed uint64) (*Proxy, error) {
	backend, err := grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(frameCodec{}),
			grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)))
	if err != nil {
		return nil, fmt.Errorf("connecting to the runtime at %s: %w", endpoint, err)
	}
	p := &Proxy{
		backend: backend,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		counts:  map[string]int{},
	}
	p.server = grpc.NewServer(
		grpc.ForceServerCodec(frameCodec{}),
		grpc.UnknownServiceHandler(p.handle),
		grpc.MaxRecvMsgSize(maxMessageSize), grpc.MaxSendMsgSize(maxMessageSize))
	return p, nil
}

// Serve listens on the unix socket at path (replacing a stale one) and
// serves in the background until Stop.
func (p *Proxy) Serve(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the stale socket %s: %w", path, err)
	}
	listener, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", path, err)
	}
	p.listener = listener
	go func() { _ = p.server.Serve(listener) }()
	return nil
}

// Stop ends every call in flight and closes the socket and the runtime
// connection.
func (p *Proxy) Stop() {
	p.server.Stop()
	_ = p.backend.Close()
}

// SetRules replaces the fault rules.
func (p *Proxy) SetRules(rules []Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append([]Rule(nil), rules...)
}

// Enable switches the faults on or off; off, every call goes through
// untouched.
func (p *Proxy) Enable(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.enabled = on
}

// Counts returns how many faults of each kind (KindError, ...) were
// injected so far, and how many calls went through the proxy.
func (p *Proxy) Counts() (faults map[string]int, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	faults = make(map[string]int, len(p.counts))
	for kind, n := range p.counts {
		faults[kind] = n
	}
	return faults, p.calls
}

func (p *Proxy) decide(fullMethod string) Action {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if !p.enabled {
		return Action{}
	}
	return Decide(p.rules, fullMethod, p.rng)
}

func (p *Proxy) count(kind string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[kind]++
}

// handle forwards one call of any method, applying the faults decided for
// it. Every CRI call sends exactly one request; unary calls get one reply,
// streaming ones (GetContainerEvents) any number.
func (p *Proxy) handle(_ any, in grpc.ServerStream) error {
	fullMethod, _ := grpc.MethodFromServerStream(in)
	if !forwarded(fullMethod) {
		return status.Errorf(codes.Unimplemented, "criproxy: %s is not a CRI v1 method", fullMethod)
	}
	ctx := in.Context()
	action := p.decide(fullMethod)

	if action.Delay > 0 {
		p.count(KindDelay)
		timer := time.NewTimer(action.Delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if action.Code != codes.OK && !action.AfterForward {
		p.count(KindError)
		return status.Errorf(action.Code, "criproxy: injected %s before %s reached the runtime", action.Code, fullMethod)
	}

	var request frame
	if err := in.RecvMsg(&request); err != nil {
		return err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	outCtx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx, md.Copy()))
	defer cancel()
	out, err := p.backend.NewStream(outCtx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, fullMethod)
	if err != nil {
		return err
	}
	if err := out.SendMsg(&request); err != nil {
		return err
	}
	if err := out.CloseSend(); err != nil {
		return err
	}

	for sent := 0; ; sent++ {
		var reply frame
		err := out.RecvMsg(&reply)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			// The runtime's own status, code and message unchanged.
			return err
		}
		if action.Code != codes.OK {
			p.count(KindLostReply)
			return status.Errorf(action.Code, "criproxy: injected %s after the runtime answered %s", action.Code, fullMethod)
		}
		if action.Drop && sent == 1 {
			p.count(KindDrop)
			return status.Errorf(codes.Unavailable, "criproxy: injected a dropped stream of %s", fullMethod)
		}
		if err := in.SendMsg(&reply); err != nil {
			return err
		}
	}
}

func forwarded(fullMethod string) bool {
	for _, prefix := range services {
		if strings.HasPrefix(fullMethod, prefix) {
			return true
		}
	}
	return false
}

// frame is one message as bytes on the wire, never decoded.
type frame struct{ data []byte }

// frameCodec passes frames through as they are.
type frameCodec struct{}

func (frameCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("criproxy: cannot marshal a %T", v)
	}
	return f.data, nil
}

func (frameCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("criproxy: cannot unmarshal into a %T", v)
	}
	f.data = append([]byte(nil), data...)
	return nil
}

// Name is proto's: the content type both ends already speak.
func (frameCodec) Name() string { return "proto" }
