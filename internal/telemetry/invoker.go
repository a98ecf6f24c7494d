package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/duet-test/duet"
)

// Invoker decorates invoke(), the one exit to registered MCP servers: calls
// by serverKey and outcome with their latency, and one span per call (in
// the run's trace for a running case), whose context the MCP client's
// HTTP requests carry downstream as traceparent (Transport).
func (t *Telemetry) Invoker(next duet.Invoker) duet.Invoker {
	if !t.Tracing() && !t.Metrics() {
		return next
	}
	return invoker{t: t, next: next}
}

type invoker struct {
	t    *Telemetry
	next duet.Invoker
}

func (i invoker) Invoke(ctx context.Context, req duet.InvokeRequest) (res *duet.ToolResult, err error) {
	start := time.Now()
	if i.t.Tracing() {
		ctx = i.t.runContext(ctx, req.TraceID)
		var span trace.Span
		ctx, span = i.t.tracer.Start(ctx, "invoke "+req.Tool, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
			attribute.String("duet.server_key", req.ServerKey), attribute.String("duet.tool", req.Tool), attribute.String("duet.source", string(req.Source))))
		defer func() { endSpan(span, err) }()
	}
	res, err = i.next.Invoke(ctx, req)
	if m := i.t.m; m != nil {
		code := duet.OutcomeOK
		if err != nil {
			code = duet.ErrorCode(err)
		}
		key := req.ServerKey
		if code == duet.CodeMCPServerNotConfigured || len(key) > 80 {
			key = "unknown" // a key no registration has: not a label value of its own
		}
		m.invocations.WithLabelValues(key, labelCode(code)).Inc()
		m.invocationDuration.WithLabelValues(key).Observe(seconds(time.Since(start)))
	}
	return res, err
}
