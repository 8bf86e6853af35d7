package criproxy

import (
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// Rule says which faults calls to the methods it matches get, each at its
// own rate (0 to 1) per call. The first rule that matches a method is the
// one applied.
type Rule struct {
	// Method is a CRI method's short name ("RunPodSandbox"), a full one
	// ("/runtime.v1.RuntimeService/RunPodSandbox"), a service
	// ("runtime.v1.ImageService") or "*" for every method.
	Method string

	// ErrorRate is the chance that a call fails with one of Codes
	// (Unavailable, DeadlineExceeded and Unknown when empty). Half of
	// these failures happen before the call reaches the runtime, the
	// other half after it: the runtime did the work and its reply was
	// lost, as when a connection breaks at the wrong moment.
	ErrorRate float64
	Codes     []codes.Code

	// DelayRate is the chance that a call is held up to MaxDelay
	// (uniformly) before it is forwarded.
	DelayRate float64
	MaxDelay  time.Duration

	// DropRate is the chance that a streaming call is cut with
	// Unavailable after its first message from the runtime.
	DropRate float64
}

// DefaultCodes are the codes a failing call gets when its rule names none:
// what a runtime restarting, a stalled call and a broken connection give.
var DefaultCodes = []codes.Code{codes.Unavailable, codes.DeadlineExceeded, codes.Unknown}

// Action is what the proxy does to one call.
type Action struct {
	// Delay before the call is forwarded.
	Delay time.Duration
	// Code, when not OK, fails the call: before it is forwarded, or
	// after when AfterForward.
	Code         codes.Code
	AfterForward bool
	// Drop cuts a stream after its first message.
	Drop bool
}

// Fault kinds, as counted in Counts.
const (
	KindError     = "error"
	KindLostReply = "lost-reply"
	KindDelay     = "delay"
	KindDrop      = "drop"
)

// Decide is the pure choice of what happens to a call of fullMethod
// (/package.Service/Method) under rules, drawing from rng. Every draw is
// made whatever the rates, so that a seed gives the same sequence of
// decisions for the same sequence of calls.
func Decide(rules []Rule, fullMethod string, rng *rand.Rand) Action {
	delayDraw, delayFraction := rng.Float64(), rng.Float64()
	errorDraw, codeDraw, whenDraw := rng.Float64(), rng.IntN(1<<30), rng.Float64()
	dropDraw := rng.Float64()

	rule, ok := match(rules, fullMethod)
	if !ok {
		return Action{}
	}
	var action Action
	if delayDraw < rule.DelayRate && rule.MaxDelay > 0 {
		action.Delay = time.Duration(delayFraction * float64(rule.MaxDelay))
	}
	if errorDraw < rule.ErrorRate {
		codeList := rule.Codes
		if len(codeList) == 0 {
			codeList = DefaultCodes
		}
		action.Code = codeList[codeDraw%len(codeList)]
		action.AfterForward = whenDraw < 0.5
	}
	action.Drop = dropDraw < rule.DropRate
	return action
}

// match finds the first rule naming fullMethod.
func match(rules []Rule, fullMethod string) (Rule, bool) {
	service, method := splitMethod(fullMethod)
	for _, rule := range rules {
		switch rule.Method {
		case "*", fullMethod, method, service:
			return rule, true
		}
	}
	return Rule{}, false
}

// splitMethod splits /runtime.v1.RuntimeService/RunPodSandbox into
// runtime.v1.RuntimeService and RunPodSandbox.
func splitMethod(fullMethod string) (service, method string) {
	service, method, _ = strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	return service, method
}
