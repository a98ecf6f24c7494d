package browser

import (
	"encoding/json"
	"testing"

	"github.com/duet-test/duet"
)

// TestTraceChromium records Chromium's trace while a session opens a page
// and runs a script, and finds in it the protocol commands the page's
// renderer ran, with their CPU time, and the names of the threads.
func TestTraceChromium(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	p := NewPool(Options{MaxBrowsers: 1, Logger: testLogger()})
	t.Cleanup(p.Close)
	if _, err := p.TraceChromium(t.Context(), []string{"devtools"}); duet.ErrorCode(err) != duet.CodeBrowserUnavailable {
		t.Fatalf("TraceChromium before any browser started: got %v, want %s", err, duet.CodeBrowserUnavailable)
	}
	site := newSite(t)
	s := newSession(t, p, "")
	stop, err := p.TraceChromium(t.Context(), []string{"toplevel", "devtools"})
	if err != nil {
		t.Fatal(err)
	}
	open(t, s, site, "/")
	if _, err := s.Title(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, err := stop(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var trace struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			TDur *int64         `json:"tdur"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &trace); err != nil {
		t.Fatalf("the trace is not JSON: %v", err)
	}
	commands, threads := map[string]bool{}, 0
	for _, e := range trace.TraceEvents {
		switch {
		case e.Name == "api_call" && e.Ph == "X" && e.TDur != nil:
			if m, ok := e.Args["method_name"].(string); ok {
				commands[m] = true
			}
		case e.Name == "thread_name" && e.Ph == "M":
			threads++
		}
	}
	if !commands["Runtime.evaluate"] && !commands["Runtime.callFunctionOn"] {
		t.Errorf("the trace (%d events) has no renderer's run of the title's script; commands seen: %v", len(trace.TraceEvents), commands)
	}
	if threads == 0 {
		t.Errorf("the trace names no thread")
	}
}
