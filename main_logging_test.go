package main

import (
	"flag"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelet/nodelet/internal/options"
)

func parsedLogOptions(t *testing.T, args ...string) *zap.Options {
	t.Helper()
	zapOpts := &zap.Options{}
	goFlags := flag.NewFlagSet("log", flag.ContinueOnError)
	zapOpts.BindFlags(goFlags)
	opts, err := options.Parse(args, goFlags)
	if err != nil {
		t.Fatal(err)
	}
	applyKubeletLogFlags(zapOpts, opts)
	return zapOpts
}

func TestErrorsCarryNoStackTraceUnlessAsked(t *testing.T) {
	if level := parsedLogOptions(t).StacktraceLevel; level.Enabled(zapcore.ErrorLevel) {
		t.Error("an error log carries a stack trace by default")
	}
	if level := parsedLogOptions(t, "--zap-stacktrace-level=error").StacktraceLevel; level == nil || !level.Enabled(zapcore.ErrorLevel) {
		t.Error("--zap-stacktrace-level=error does not bring the stack traces back")
	}
}

func TestVerbosityIsLogrsV(t *testing.T) {
	// --v=4 logs V(4) and below, as the kubelet's -v.
	level := parsedLogOptions(t, "--v=4").Level
	if level == nil || !level.Enabled(zapcore.Level(-4)) || level.Enabled(zapcore.Level(-5)) {
		t.Errorf("--v=4 gives level %v, want V(4) on and V(5) off", level)
	}
}
