package step

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
)

// bareEnv is a case whose browser driver has only the Page methods.
type bareEnv struct{ page Page }

func (bareEnv) Vars() map[string]any                                     { return map[string]any{} }
func (bareEnv) Save(string, any) error                                   { return nil }
func (bareEnv) RunSteps(context.Context, []duet.Step, int) error         { return nil }
func (bareEnv) FlowState(string, int)                                    {}
func (bareEnv) Task() *duet.Task                                         { return &duet.Task{BaseURL: "http://h"} }
func (bareEnv) Secrets() *redact.Set                                     { return &redact.Set{} }
func (e bareEnv) Page(context.Context) (Page, error)                     { return e.page, nil }
func (bareEnv) Do(*http.Request) (*http.Response, error)                 { return nil, nil }
func (bareEnv) MaxBodyBytes() int64                                      { return 0 }
func (bareEnv) CallTool(context.Context, *duet.MCPCallStep) (any, error) { return nil, nil }
func (bareEnv) SaveArtifact(context.Context, *duet.Step, string, []byte) (string, error) {
	return "", nil
}

// barePage is a Page and nothing more.
type barePage struct{ Page }

// TestDriverWithoutCapability: a step whose kind needs more of the browser
// than the driver offers fails with BROWSER_ERROR, naming what it lacks.
func TestDriverWithoutCapability(t *testing.T) {
	t.Parallel()
	env := bareEnv{page: barePage{}}
	for src, want := range map[string]string{
		"- click: {role: button, name: Pay}\n": "lacks Elements",
		"- click: '#pay'\n":                    "lacks Elements",
		"- frame: '#f'\n":                      "lacks Framer",
		"- waitForPopup:\n":                    "lacks Tabs",
		"- onDialog: dismiss\n":                "lacks Dialogs",
		"- back:\n":                            "lacks Historian",
		"- emulate: {locale: de-DE}\n":         "lacks Emulator",
		"- evaluate: '1'\n":                    "lacks Evaluator",
	} {
		steps, diags := compileSteps(t, src)
		if len(diags) > 0 || len(steps) != 1 {
			t.Fatalf("%s: %v", src, diags)
		}
		st := steps[0]
		_, _, err := Lookup(st.Kind).Run(t.Context(), env, &st)
		if duet.ErrorCode(err) != duet.CodeBrowserError || !strings.Contains(duet.ErrorMessage(err), want) {
			t.Errorf("%s: got %v, want BROWSER_ERROR %q", src, err, want)
		}
	}
}
