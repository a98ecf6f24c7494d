package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// Auditor decorates the catalog's auditor: every audit record — one per
// call through any door, refusals included — is also counted and timed.
func (t *Telemetry) Auditor(next catalog.Auditor) catalog.Auditor {
	if t.m == nil {
		return next
	}
	return auditor{t: t, next: next}
}

type auditor struct {
	t    *Telemetry
	next catalog.Auditor
}

func (a auditor) Record(rec *duet.AuditRecord) {
	m := a.t.m
	method := labelMethod(rec.Method)
	tool := m.labelTool(rec.Method, rec.Tool)
	source := labelSource(rec.CallSource)
	m.calls.WithLabelValues(method, tool, source, labelCode(rec.Outcome)).Inc()
	m.callDuration.WithLabelValues(method, tool, source).Observe(seconds(time.Duration(rec.DurationUs) * time.Microsecond))
	if a.next != nil {
		a.next.Record(rec)
	}
}

// Observe is the catalog's governance hook (catalog.Options.Observe): one
// span per governed operation, child of the transport's span.
func (t *Telemetry) Observe(ctx context.Context, op catalog.Op) (context.Context, func(error)) {
	if !t.Tracing() {
		return ctx, func(error) {}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, func(error) {} // a trace not sampled: its children would not be either
	}
	name := "catalog " + op.Method
	if op.Method == "tools/call" || op.Method == "prompts/get" {
		name += " " + op.Name
	}
	ctx = inTrace(ctx, op.Caller.TraceID)
	ctx, span := t.tracer.Start(ctx, name, trace.WithAttributes(
		attribute.String("duet.method", op.Method),
		attribute.String("duet.source", string(op.Caller.Source)),
		attribute.Int("duet.arg_bytes", op.ArgBytes),
	))
	if op.Method == "tools/call" {
		span.SetAttributes(attribute.String("duet.tool", op.Name))
	}
	return ctx, func(err error) { endSpan(span, err) }
}
