package main

import (
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelet/nodelet/internal/options"
)

// applyKubeletLogFlags gives the kubelet's --v and --logging-format their
// meaning in nodelet's logger, unless the logger's own flags
// (--zap-log-level, --zap-encoder) are given, which win. Errors carry no
// stack trace, as the kubelet's do not: most are the runtime's or the API
// server's answers, where a trace of nodelet's frames reads as a crash
// (--zap-stacktrace-level brings them back).
func applyKubeletLogFlags(zapOpts *zap.Options, opts *options.NodeletServer) {
	if !opts.Changed("zap-stacktrace-level") {
		zapOpts.StacktraceLevel = zapcore.PanicLevel
	}
	if v := opts.Verbosity; v > 0 && !opts.Changed("zap-log-level") {
		// zap's levels below Debug are the verbosities logr's V(n) logs at.
		zapOpts.Level = zapcore.Level(-min(v, 127))
	}
	if opts.LoggingFormat != "" && !opts.Changed("zap-encoder") {
		config := uberzap.NewProductionEncoderConfig()
		config.EncodeTime = zapOpts.TimeEncoder
		if opts.LoggingFormat == "json" {
			zapOpts.Encoder = zapcore.NewJSONEncoder(config)
		} else {
			zapOpts.Encoder = zapcore.NewConsoleEncoder(config)
		}
	}
}
