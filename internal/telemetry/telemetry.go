// Package telemetry is Duet's operator surface: Prometheus metrics and
// OpenTelemetry traces, applied as decorators and middleware around what
// already exists — the HTTP handler, the catalog's audit trail and its
// governance hook, the store, invoke() and outbound HTTP — never as calls
// sprinkled through the domain code.
//
// Metrics use their own registry (nothing global) and low-cardinality
// labels only: tool names come from the catalog, methods from a fixed
// list, never a user, run or trace id. Traces are off unless an OTLP
// endpoint is configured; then spans go to it over OTLP/HTTP (JSON
// encoding, see otlp.go for why not the official exporter).
package telemetry

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/duet-test/duet"
)

// Options configure Telemetry.
type Options struct {
	// Metrics turns the Prometheus registry and collectors on.
	Metrics bool
	// Exporter receives finished spans; nil turns tracing off (every
	// decorator is then a pass-through for spans).
	Exporter sdktrace.SpanExporter
	// Sync exports each span as it ends (tests with an in-memory
	// exporter); otherwise spans are batched.
	Sync bool
	// ServiceName is the service.name resource attribute; "" means duet.
	ServiceName string
	Version     string
}

// Telemetry holds the registry and the tracer provider.
type Telemetry struct {
	// Registry is the Prometheus registry of this process (nil when metrics
	// are off).
	Registry *prometheus.Registry

	m      *metrics
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	runs   *runSpans
}

// New returns the telemetry o asks for. With neither metrics nor an
// exporter, every decorator passes through.
func New(o Options) *Telemetry {
	t := &Telemetry{tracer: noop.NewTracerProvider().Tracer(""), prop: propagation.TraceContext{}, runs: newRunSpans()}
	if o.Metrics {
		t.Registry = prometheus.NewRegistry()
		t.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		t.m = newMetrics(t.Registry)
	}
	if o.Exporter != nil {
		name := o.ServiceName
		if name == "" {
			name = "duet"
		}
		res := resource.NewSchemaless(attribute.String("service.name", name), attribute.String("service.version", o.Version))
		opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
		if o.Sync {
			opts = append(opts, sdktrace.WithSyncer(o.Exporter))
		} else {
			opts = append(opts, sdktrace.WithBatcher(o.Exporter))
		}
		t.tp = sdktrace.NewTracerProvider(opts...)
		t.tracer = t.tp.Tracer("github.com/duet-test/duet")
	}
	return t
}

// Tracing reports whether spans are recorded.
func (t *Telemetry) Tracing() bool { return t != nil && t.tp != nil }

// Metrics reports whether metrics are collected.
func (t *Telemetry) Metrics() bool { return t != nil && t.m != nil }

// Shutdown flushes the spans still buffered.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// endSpan ends span with err's code as its status.
func endSpan(span trace.Span, err error) {
	if err != nil {
		code := duet.ErrorCode(err)
		span.SetAttributes(attribute.String("duet.code", string(code)))
		span.SetStatus(codes.Error, string(code))
	}
	span.End()
}

// traceID parses a W3C trace id (32 hex digits).
func traceID(s string) (trace.TraceID, bool) {
	id, err := trace.TraceIDFromHex(s)
	return id, err == nil && id.IsValid()
}

// inTrace returns ctx with a remote parent in trace id (when ctx carries
// no span): what Duet started later in the same trace — a run executed
// by a worker after the start_test_run call — joins that trace. The
// parent's span id is random: the span that started the work has ended
// and was not recorded with an id Duet keeps.
func inTrace(ctx context.Context, id string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	tid, ok := traceID(id)
	if !ok {
		return ctx
	}
	var sid trace.SpanID
	copy(sid[:], tid[8:]) // stable per trace, never zero for a valid id
	sid[0] |= 1
	return trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
}

func seconds(d time.Duration) float64 { return d.Seconds() }
