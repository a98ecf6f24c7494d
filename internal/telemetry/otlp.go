package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// OTLPExporter sends spans to an OpenTelemetry collector over OTLP/HTTP
// with the JSON encoding (the OTLP specification's
// application/json form: hex trace and span ids, enums as numbers,
// 64-bit integers as strings).
//
// Why not the official otlptracehttp exporter: it encodes protobuf through
// go.opentelemetry.io/proto/otlp, whose generated packages also bring in
// google.golang.org/grpc and grpc-gateway — tens of packages compiled into
// every build and about 10 MB more binary (docs/operations.md has the
// numbers) for the one POST this file makes. Every collector accepts the
// JSON encoding on the same /v1/traces endpoint.
type OTLPExporter struct {
	URL     string
	Headers http.Header
	Client  *http.Client
}

// NewOTLPExporter returns an exporter to endpoint (the full traces URL,
// e.g. http://collector:4318/v1/traces) with headers in the
// OTEL_EXPORTER_OTLP_HEADERS form (k=v,k2=v2, values URL-encoded).
func NewOTLPExporter(endpoint, headers string) (*OTLPExporter, error) {
	h := http.Header{}
	for _, kv := range strings.Split(headers, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: want key=value pairs")
		}
		uv, err := url.QueryUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_HEADERS: bad value encoding")
		}
		h.Set(strings.TrimSpace(k), uv)
	}
	return &OTLPExporter{URL: endpoint, Headers: h, Client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// ExportSpans posts one batch.
func (e *OTLPExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(EncodeOTLP(spans))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range e.Headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.Client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: the collector answered HTTP %d", resp.StatusCode)
	}
	return nil
}

// Shutdown does nothing: ExportSpans holds nothing between calls.
func (e *OTLPExporter) Shutdown(context.Context) error { return nil }

// OTLP JSON types (opentelemetry-proto, trace/v1, JSON mapping).
type (
	otlpRequest struct {
		ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []otlpKeyValue `json:"attributes"`
	}
	otlpScopeSpans struct {
		Scope otlpScope  `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	otlpScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	otlpSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		ParentSpanID      string         `json:"parentSpanId,omitempty"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []otlpKeyValue `json:"attributes,omitempty"`
		Status            otlpStatus     `json:"status"`
	}
	otlpStatus struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	otlpKeyValue struct {
		Key   string    `json:"key"`
		Value otlpValue `json:"value"`
	}
	otlpValue struct {
		StringValue *string  `json:"stringValue,omitempty"`
		BoolValue   *bool    `json:"boolValue,omitempty"`
		IntValue    *string  `json:"intValue,omitempty"`
		DoubleValue *float64 `json:"doubleValue,omitempty"`
		ArrayValue  *struct {
			Values []otlpValue `json:"values"`
		} `json:"arrayValue,omitempty"`
	}
)

// EncodeOTLP encodes spans as an OTLP ExportTraceServiceRequest (JSON
// mapping), grouped by resource and instrumentation scope.
func EncodeOTLP(spans []sdktrace.ReadOnlySpan) any {
	req := otlpRequest{}
	resIndex := map[string]int{}
	scopeIndex := map[[2]string]int{}
	for _, s := range spans {
		resKey := s.Resource().String()
		ri, ok := resIndex[resKey]
		if !ok {
			req.ResourceSpans = append(req.ResourceSpans, otlpResourceSpans{Resource: otlpResource{Attributes: kvs(s.Resource().Attributes())}})
			ri = len(req.ResourceSpans) - 1
			resIndex[resKey] = ri
		}
		sk := [2]string{resKey, s.InstrumentationScope().Name + "@" + s.InstrumentationScope().Version}
		si, ok := scopeIndex[sk]
		if !ok {
			rs := &req.ResourceSpans[ri]
			rs.ScopeSpans = append(rs.ScopeSpans, otlpScopeSpans{Scope: otlpScope{Name: s.InstrumentationScope().Name, Version: s.InstrumentationScope().Version}})
			si = len(rs.ScopeSpans) - 1
			scopeIndex[sk] = si
		}
		sp := otlpSpan{
			TraceID: s.SpanContext().TraceID().String(), SpanID: s.SpanContext().SpanID().String(),
			Name: s.Name(), Kind: int(s.SpanKind()),
			StartTimeUnixNano: strconv.FormatInt(s.StartTime().UnixNano(), 10),
			EndTimeUnixNano:   strconv.FormatInt(s.EndTime().UnixNano(), 10),
			Attributes:        kvs(s.Attributes()),
		}
		if p := s.Parent(); p.IsValid() {
			sp.ParentSpanID = p.SpanID().String()
		}
		switch s.Status().Code {
		case codes.Error:
			sp.Status = otlpStatus{Code: 2, Message: s.Status().Description}
		case codes.Ok:
			sp.Status = otlpStatus{Code: 1}
		}
		ss := &req.ResourceSpans[ri].ScopeSpans[si]
		ss.Spans = append(ss.Spans, sp)
	}
	return req
}

func kvs(attrs []attribute.KeyValue) []otlpKeyValue {
	out := make([]otlpKeyValue, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, otlpKeyValue{Key: string(a.Key), Value: value(a.Value)})
	}
	return out
}

func value(v attribute.Value) otlpValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return otlpValue{BoolValue: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return otlpValue{IntValue: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return otlpValue{DoubleValue: &f}
	case attribute.STRINGSLICE:
		arr := &struct {
			Values []otlpValue `json:"values"`
		}{}
		for _, s := range v.AsStringSlice() {
			arr.Values = append(arr.Values, value(attribute.StringValue(s)))
		}
		return otlpValue{ArrayValue: arr}
	}
	s := v.String()
	return otlpValue{StringValue: &s}
}
