package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/telemetry"
)

// TestOTLPExport: spans reach a collector as OTLP/HTTP JSON the way the
// specification writes it — hex ids, parent links, numeric kinds and
// status codes, 64-bit integers as strings, the service name as a resource
// attribute — with the OTEL_EXPORTER_OTLP_HEADERS headers.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	var headers []http.Header
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies, headers = append(bodies, b), append(headers, r.Header.Clone())
		mu.Unlock()
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", 400)
		}
	}))
	defer collector.Close()
	exp, err := telemetry.NewOTLPExporter(collector.URL+"/v1/traces", "api-key=s%20ecret,x-team=qa")
	if err != nil {
		t.Fatal(err)
	}
	tel := telemetry.New(telemetry.Options{Exporter: exp, Sync: true, ServiceName: "duet-test"})
	ctx, end := tel.Observe(context.Background(), catalog.Op{Caller: duet.Caller{UserID: "alice", Source: duet.SourceMCP, TraceID: "4bf92f3577b34da6a1a9c0e6b7c2d1e0"},
		Method: "tools/call", Name: "get_test_task", ArgBytes: 42})
	parent := trace.SpanContextFromContext(ctx)
	inv := tel.Invoker(failing{})
	inv.Invoke(ctx, duet.InvokeRequest{ServerKey: "sk_1", Tool: "query_order"})
	end(nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 {
		t.Fatalf("got %d exports, want 2 (one per span, synchronous)", len(bodies))
	}
	if h := headers[0]; h.Get("Api-Key") != "s ecret" || h.Get("X-Team") != "qa" {
		t.Errorf("headers: %v", h)
	}
	type span struct {
		TraceID, SpanID, ParentSpanID, Name string
		Kind                                int
		StartTimeUnixNano, EndTimeUnixNano  string
		Attributes                          []struct {
			Key   string
			Value map[string]any
		}
		Status struct {
			Code    int
			Message string
		}
	}
	var got []span
	for _, b := range bodies {
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string
						Value map[string]any
					}
				}
				ScopeSpans []struct {
					Scope struct{ Name string }
					Spans []span
				}
			}
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("export is not JSON: %v", err)
		}
		rs := req.ResourceSpans[0]
		found := false
		for _, a := range rs.Resource.Attributes {
			found = found || a.Key == "service.name" && a.Value["stringValue"] == "duet-test"
		}
		if !found {
			t.Errorf("resource: %+v", rs.Resource)
		}
		got = append(got, rs.ScopeSpans[0].Spans...)
	}
	invoke, call := got[0], got[1]
	if call.Name != "catalog tools/call get_test_task" || call.TraceID != "4bf92f3577b34da6a1a9c0e6b7c2d1e0" || call.SpanID != parent.SpanID().String() || call.Kind != 1 {
		t.Errorf("catalog span: %+v", call)
	}
	if invoke.Name != "invoke query_order" || invoke.ParentSpanID != call.SpanID || invoke.Kind != 3 || invoke.Status.Code != 2 || invoke.Status.Message != "MCP_UNREACHABLE" {
		t.Errorf("invoke span: %+v", invoke)
	}
	if len(call.StartTimeUnixNano) < 18 || call.EndTimeUnixNano < call.StartTimeUnixNano {
		t.Errorf("times: %s %s", call.StartTimeUnixNano, call.EndTimeUnixNano)
	}
	for _, a := range call.Attributes {
		if a.Key == "duet.arg_bytes" && a.Value["intValue"] != "42" {
			t.Errorf("an int attribute is a string in OTLP JSON: %v", a.Value)
		}
	}
}

type failing struct{}

func (failing) Invoke(context.Context, duet.InvokeRequest) (*duet.ToolResult, error) {
	return nil, duet.WrapError(duet.CodeMCPUnreachable, errors.New("refused"), "unreachable")
}
