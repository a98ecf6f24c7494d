package duet

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRunDisclosure(t *testing.T) {
	t.Parallel()
	run := &Run{ID: "run_1", TriggeredBy: "bob"}
	for viewer, want := range map[string]Disclosure{"bob": DiscloseFull, "alice": DiscloseRestricted, "": DiscloseRestricted, "Bob": DiscloseRestricted} {
		if got := RunDisclosure(viewer, run); got != want {
			t.Errorf("RunDisclosure(%q): got %s, want %s", viewer, got, want)
		}
	}
	if got := RunDisclosure("bob", nil); got != DiscloseRestricted {
		t.Errorf("no run: got %s", got)
	}
}

func TestDiscloseRun(t *testing.T) {
	t.Parallel()
	fresh := func() (*Run, *Execution) {
		run := &Run{ID: "run_1", TriggeredBy: "bob", ErrorCode: CodeAssertionFailed, ErrorMessage: "case x: bob's order 4711 is cancelled",
			PostRun: []*PostRunResult{{Name: "ticket", Status: StatusFailed, ErrorCode: CodeMCPToolError, ErrorMessage: "ticket for order 4711 refused"}}}
		x := &Execution{ID: "exec_1", Status: StatusFailed, ErrorCode: CodeAssertionFailed, ErrorMessage: "step 2: bob's order 4711 is cancelled",
			Vars: map[string]any{"order": "4711"},
			Results: []*StepResult{
				{Index: 0, Kind: StepMCPCall, Name: "query", Status: StatusPassed, DurationMs: 12, SavedAs: "order", Output: json.RawMessage(`{"id":"4711"}`)},
				{Index: 1, Kind: StepAssert, Name: "check", Status: StatusFailed, ErrorCode: CodeAssertionFailed, ErrorMessage: "4711 is cancelled", Artifacts: []string{"art"}},
			}}
		return run, x
	}
	run, x := fresh()
	if d := DiscloseRun("bob", run, x); d != DiscloseFull || x.Vars == nil || x.Results[0].Output == nil || !strings.Contains(run.ErrorMessage, "4711") {
		t.Fatalf("the executor's view was reduced: %s %+v", d, x)
	}
	run, x = fresh()
	if d := DiscloseRun("alice", run, x); d != DiscloseRestricted {
		t.Fatalf("alice: got %s", d)
	}
	b, _ := json.Marshal([]any{run, x})
	if strings.Contains(string(b), "4711") || strings.Contains(string(b), `"art"`) {
		t.Fatalf("the restricted view keeps what bob's credentials obtained: %s", b)
	}
	if run.PostRun[0].ErrorCode != CodeMCPToolError || !strings.Contains(run.PostRun[0].ErrorMessage, "shown only to bob") {
		t.Fatalf("the restricted post-run note: got %+v, want its code and the withheld note", run.PostRun[0])
	}
	if x.Results[1].ErrorCode != CodeAssertionFailed || x.Results[0].DurationMs != 12 || x.Results[0].SavedAs != "order" ||
		x.Status != StatusFailed || !strings.Contains(x.ErrorMessage, "shown only to bob") || !strings.Contains(x.Results[1].ErrorMessage, "bob") {
		t.Fatalf("the restricted view lost statuses, timings or codes: %s", b)
	}
	if x.Results[0].ErrorMessage != "" {
		t.Fatalf("a step without a message got one: %q", x.Results[0].ErrorMessage)
	}
}

func TestToolReadOnly(t *testing.T) {
	t.Parallel()
	for ann, want := range map[string]bool{`{"readOnlyHint":true}`: true, `{"readOnlyHint":false,"destructiveHint":true}`: false, `{}`: false, ``: false, `not json`: false} {
		if got := (&MCPTool{Annotations: json.RawMessage(ann)}).ReadOnly(); got != want {
			t.Errorf("ReadOnly(%s): got %v, want %v", ann, got, want)
		}
	}
	if (*MCPTool)(nil).ReadOnly() {
		t.Error("a nil tool is read-only")
	}
}
