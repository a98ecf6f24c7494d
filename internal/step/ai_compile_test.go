package step

import (
	"strings"
	"testing"
)

// TestAIStepsCompile: what the compiler refuses in an AI step, at its line
// and column.
func TestAIStepsCompile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ src, want string }{
		{"- aiAssert: \"\"\n", "1:13: aiAssert must say something"},
		{"- aiAssert: {prompt: \" \"}\n", "1:22: prompt must say something"},
		{"- aiAssert:\n", "aiAssert must be a string or a mapping"},
		{"- aiAssert: {prompt: x, maxTokens: 0}\n", "1:36: maxTokens must be a whole number"},
		{"- aiAssert: {prompt: x, nope: 1}\n", `1:25: unknown key "nope"`},
		{"- aiAssert: \"${nope}\"\n", "unknown name nope"},
		{"- aiQuery: the status\n", "1:12: aiQuery needs {want, as, schema}"},
		{"- aiQuery: {want: the status}\n", "aiQuery needs as:"},
		{"- aiQuery: {want: the status, as: s, schema: {type: string, pattern: \"(\"}}\n", "1:46: schema:"},
		{"- aiWaitFor: {prompt: x, interval: soon}\n", "1:36: timeout \"soon\""},
	} {
		_, diags := compileSteps(t, tt.src)
		var got []string
		for _, d := range diags {
			got = append(got, d.Error())
		}
		if !strings.Contains(strings.Join(got, "\n"), tt.want) {
			t.Errorf("%q: got %q, want %q", tt.src, got, tt.want)
		}
	}
	steps, diags := compileSteps(t, "- aiQuery: {want: \"the items of ${orderId}\", as: items, schema: {type: array}, maxTokens: 5000}\n- assert: items[0] != nil\n")
	if len(diags) != 0 || len(steps) != 2 || steps[0].AI.SaveAs != "items" || string(steps[0].AI.Schema) != `{"type":"array"}` || steps[0].AI.MaxTokens != 5000 {
		t.Errorf("got %+v %v", steps, diags)
	}
}
