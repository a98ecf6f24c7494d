package interop_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder is an HTTP transport that adds headers and records every request
// (method from the JSON-RPC body, headers) and response body.
type recorder struct {
	headers map[string]string
	mu      sync.Mutex
	seen    []exchange
}

type exchange struct {
	method string
	header http.Header
	body   []byte
	resp   []byte
	status int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range r.headers {
		req.Header.Set(k, v)
	}
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	rb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	var msg struct {
		Method string `json:"method"`
	}
	json.Unmarshal(body, &msg)
	r.mu.Lock()
	r.seen = append(r.seen, exchange{msg.Method, req.Header.Clone(), body, rb, resp.StatusCode})
	r.mu.Unlock()
	return resp, nil
}

func (r *recorder) find(method string) []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []exchange
	for _, e := range r.seen {
		if e.method == method {
			out = append(out, e)
		}
	}
	return out
}

// TestDualEra: one /mcp/http endpoint serves a 2026-07-28 client
// (server/discover, no handshake, per-request _meta, Mcp-Method/Mcp-Name
// headers, ttlMs/cacheScope on lists) and clients pinned to 2025-11-25 and
// 2025-06-18 (the initialize handshake), with the same results.
func TestDualEra(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	connect := func(t *testing.T, version string) (*mcp.ClientSession, *recorder) {
		rec := &recorder{headers: f.http.Headers}
		var opts *mcp.ClientSessionOptions
		if version != "" {
			opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "duet-interop-go-sdk", Version: "1.0.0"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: f.http.URL, HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1}, opts)
		if err != nil {
			t.Fatalf("connect (%q): %v", version, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs, rec
	}

	cs, rec := connect(t, "")
	want := goObserve(t, cs, f.calls)
	t.Run("2026-07-28", func(t *testing.T) {
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Errorf("negotiated %s, want 2026-07-28", v)
		}
		if len(rec.find("server/discover")) == 0 || len(rec.find("initialize")) != 0 {
			t.Errorf("want server/discover and no initialize; saw %d discover, %d initialize", len(rec.find("server/discover")), len(rec.find("initialize")))
		}
		calls := rec.find("tools/call")
		if len(calls) == 0 {
			t.Fatal("no tools/call seen")
		}
		for _, e := range calls {
			var body struct {
				Params struct {
					Name string         `json:"name"`
					Meta map[string]any `json:"_meta"`
				} `json:"params"`
			}
			json.Unmarshal(e.body, &body)
			if e.header.Get("Mcp-Method") != "tools/call" || e.header.Get("Mcp-Name") != body.Params.Name {
				t.Errorf("tools/call %s: headers Mcp-Method=%q Mcp-Name=%q", body.Params.Name, e.header.Get("Mcp-Method"), e.header.Get("Mcp-Name"))
			}
			if body.Params.Meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" {
				t.Errorf("tools/call without the per-request protocol version in _meta: %s", e.body)
			}
			if e.status != http.StatusOK {
				t.Errorf("tools/call: HTTP %d", e.status)
			}
		}
		lists := rec.find("tools/list")
		if len(lists) == 0 {
			t.Fatal("no tools/list seen")
		}
		var list struct {
			Result struct {
				TTLMs      *int   `json:"ttlMs"`
				CacheScope string `json:"cacheScope"`
			} `json:"result"`
		}
		if err := json.Unmarshal(lists[0].resp, &list); err != nil || list.Result.TTLMs == nil || list.Result.CacheScope == "" {
			t.Errorf("tools/list result without ttlMs/cacheScope: %s", lists[0].resp)
		}
	})

	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			cs, rec := connect(t, version)
			if v := cs.InitializeResult().ProtocolVersion; v != version {
				t.Errorf("negotiated %s, want %s", v, version)
			}
			if len(rec.find("initialize")) != 1 || len(rec.find("notifications/initialized")) != 1 {
				t.Errorf("want the initialize handshake; saw %d initialize, %d initialized", len(rec.find("initialize")), len(rec.find("notifications/initialized")))
			}
			if len(rec.find("server/discover")) != 0 {
				t.Error("a pinned older client sent server/discover")
			}
			compareObserved(t, version, goObserve(t, cs, f.calls), want)
		})
	}

	// Raw HTTP, for what a client library hides.
	post := func(t *testing.T, headers map[string]string, body string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.http.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range f.http.Headers {
			req.Header.Set(k, v)
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("HTTP %d, not JSON: %s", resp.StatusCode, b)
		}
		return resp.StatusCode, m
	}
	meta26 := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	h26 := func(method, name string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}
	t.Run("raw", func(t *testing.T) {
		status, m := post(t, h26("server/discover", ""), `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta26+`}}`)
		if status != 200 || m["result"] == nil {
			t.Errorf("server/discover: %d %v", status, m)
		}
		status, m = post(t, h26("tools/list", ""), `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+meta26+`}}`)
		res, _ := m["result"].(map[string]any)
		if status != 200 || res["ttlMs"] == nil || res["cacheScope"] != "private" {
			t.Errorf("tools/list: %d ttlMs=%v cacheScope=%v", status, res["ttlMs"], res["cacheScope"])
		}
		call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{},` + meta26 + `}}`
		status, m = post(t, h26("tools/call", "list_test_tasks"), call)
		if res, _ := m["result"].(map[string]any); status != 200 || res["structuredContent"] == nil {
			t.Errorf("tools/call: %d %v", status, m)
		}
		// A header that contradicts the body is refused (SEP-2243).
		status, m = post(t, h26("tools/call", "get_test_task"), call)
		if status != http.StatusBadRequest || m["error"] == nil {
			t.Errorf("tools/call with a mismatched Mcp-Name: %d %v, want 400 with a JSON-RPC error", status, m)
		}
		// The handshake versions on the same endpoint.
		for _, v := range []string{"2025-11-25", "2025-06-18"} {
			status, m = post(t, nil, `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			res, _ := m["result"].(map[string]any)
			if status != 200 || res["protocolVersion"] != v {
				t.Errorf("initialize %s: %d %v", v, status, m)
			}
		}
	})
}
