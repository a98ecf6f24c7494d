package telemetry

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/duet-test/duet"
)

// Middleware is the transport's span: one server span per HTTP request,
// continuing an incoming W3C traceparent. The span's context is written
// back into the request's traceparent header, so the trace id Duet records
// (the audit's traceId, X-Duet-Trace-Id) is this trace's.
func (t *Telemetry) Middleware(next http.Handler) http.Handler {
	if !t.Tracing() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, "HTTP "+r.Method+" "+routeOf(r.URL.Path), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", routeOf(r.URL.Path))))
		defer span.End()
		r = r.WithContext(ctx)
		r.Header = r.Header.Clone()
		r.Header.Del("Traceparent")
		t.prop.Inject(ctx, propagation.HeaderCarrier(r.Header))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		span.SetAttributes(attribute.Int("http.response.status_code", sw.status))
		if sw.status >= 500 {
			span.SetStatus(codes.Error, strconv.Itoa(sw.status))
		}
	})
}

// routeOf keeps span names low-cardinality: Duet's own routes, else
// "other".
func routeOf(path string) string {
	switch path {
	case "/mcp/http", "/mcp/tools/list", "/mcp/tools/call", "/healthz", "/readyz", "/metrics",
		"/oauth/authorize", "/oauth/callback", "/oauth/consent", "/oauth/token", "/oauth/register", "/oauth/revoke",
		"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp/http", "/.well-known/oauth-authorization-server":
		return path
	}
	return "other"
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Transport decorates an outbound HTTP transport (registered MCP servers,
// http steps): one client span per request, child of the caller's span —
// or of the run's, for requests a running case makes — and the W3C
// traceparent header sent downstream to the hosts inDomain accepts (the
// operator's trace domain; nil accepts none): a trace id links every call
// of a run, so it goes only where the operator says traces may be joined.
// The span is recorded either way. Credentials are never attributes.
func (t *Telemetry) Transport(base http.RoundTripper, inDomain func(host string) bool) http.RoundTripper {
	if !t.Tracing() {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	if inDomain == nil {
		inDomain = func(string) bool { return false }
	}
	return roundTripper{t: t, base: base, inDomain: inDomain}
}

type roundTripper struct {
	t        *Telemetry
	base     http.RoundTripper
	inDomain func(host string) bool
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if c, ok := duet.CallerFromContext(ctx); ok && c.TraceID != "" {
		ctx = rt.t.runContext(ctx, c.TraceID)
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return rt.base.RoundTrip(req)
	}
	ctx, span := rt.t.tracer.Start(ctx, "HTTP "+req.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", req.Method), attribute.String("server.address", req.URL.Host)))
	req = req.Clone(ctx)
	if rt.inDomain(req.URL.Host) {
		rt.t.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		span.SetStatus(codes.Error, "transport error")
		span.End()
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	if resp.StatusCode >= 500 {
		span.SetStatus(codes.Error, strconv.Itoa(resp.StatusCode))
	}
	span.End()
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the transport it
// decorates (http.Client.CloseIdleConnections reaches it through this).
func (rt roundTripper) CloseIdleConnections() {
	if c, ok := rt.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// LLMTransport decorates the LLM client's transport: requests by status
// class, and the tokens the provider reports in the response's usage.
func (t *Telemetry) LLMTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if !t.Metrics() {
		return base
	}
	return llmTransport{t: t, base: base}
}

type llmTransport struct {
	t    *Telemetry
	base http.RoundTripper
}

func (lt llmTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := lt.base.RoundTrip(req)
	m := lt.t.m
	if err != nil {
		m.llmRequests.WithLabelValues("error").Inc()
		return nil, err
	}
	m.llmRequests.WithLabelValues(strconv.Itoa(resp.StatusCode/100) + "xx").Inc()
	if resp.StatusCode == http.StatusOK {
		resp.Body = &usageReader{ReadCloser: resp.Body, m: m}
	}
	return resp, nil
}

// usageReader keeps the first MiB of a chat completion to read its usage
// when the client is done with it.
type usageReader struct {
	io.ReadCloser
	m    *metrics
	buf  bytes.Buffer
	done bool
}

func (u *usageReader) Read(p []byte) (int, error) {
	n, err := u.ReadCloser.Read(p)
	if u.buf.Len() < 1<<20 {
		u.buf.Write(p[:n])
	}
	return n, err
}

func (u *usageReader) Close() error {
	if !u.done {
		u.done = true
		var body struct {
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(u.buf.Bytes(), &body) == nil {
			u.m.llmTokens.WithLabelValues("prompt").Add(float64(body.Usage.Prompt))
			u.m.llmTokens.WithLabelValues("completion").Add(float64(body.Usage.Completion))
		}
	}
	return u.ReadCloser.Close()
}
