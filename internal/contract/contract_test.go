package contract_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/contract"
)

func tool(name, in string) *duet.MCPTool {
	return &duet.MCPTool{Name: name, InputSchema: json.RawMessage(in)}
}

// TestCheck: a call fits a tool, or says why not: the tool gone, a required
// argument missing, an argument no longer taken, a fixed value that no
// longer validates. A templated value is known only at run time.
func TestCheck(t *testing.T) {
	call := &duet.MCPCallStep{ToolName: "q", InputBindings: map[string]duet.Binding{
		"id":     {Source: duet.BindValue, Value: "A1"},
		"status": {Source: duet.BindValue, Value: "paid"},
		"limit":  {Source: duet.BindValue, Value: 2},
		"from":   {Source: duet.BindVar, Path: "x.y"},
		"note":   {Source: duet.BindValue, Value: "${task.name}"},
	}}
	for _, tt := range []struct {
		name   string
		schema string
		want   string // "" fits
	}{
		{"fits", `{"type":"object","properties":{"id":{"type":"string"},"status":{"enum":["paid","shipped"]},"limit":{"type":"integer"},"from":{},"note":{"type":"integer"}},"required":["id"]}`, ""},
		{"required added", `{"type":"object","properties":{"region":{"type":"string"}},"required":["region"]}`, `now requires argument "region"`},
		{"enum option gone", `{"type":"object","properties":{"status":{"enum":["shipped"]}}}`, `argument "status": the value the case passes ("paid") no longer fits`},
		{"type changed", `{"type":"object","properties":{"limit":{"type":"string"}}}`, `argument "limit": the value the case passes (2) no longer fits`},
		{"argument removed, unknown refused", `{"type":"object","properties":{"id":{}},"additionalProperties":false}`, `no longer takes argument "from"`},
		{"argument removed, unknown allowed", `{"type":"object","properties":{"id":{}}}`, ""},
	} {
		got := strings.Join(contract.Check(call, tool("q", tt.schema)), "; ")
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := contract.Check(call, nil); len(got) != 1 || !strings.Contains(got[0], "was removed") {
		t.Errorf("removed tool: %v", got)
	}
}

// TestDiff: what changed in a catalog, tool by tool.
func TestDiff(t *testing.T) {
	old := []*duet.MCPTool{
		tool("a", `{"type":"object","properties":{"x":{"type":"string","enum":["1","2"]},"y":{"type":"integer"}},"required":["x"]}`),
		tool("gone", `{"type":"object"}`),
		{Name: "ann", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		tool("same", `{"type":"object"}`),
	}
	new := []*duet.MCPTool{
		tool("a", `{"type":"object","properties":{"x":{"type":"string","enum":["2","3"]},"y":{"type":"string"},"z":{"type":"string"}},"required":["x","z"]}`),
		{Name: "ann", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":false}`)},
		tool("same", `{"type":"object"}`),
		tool("fresh", `{"type":"object"}`),
	}
	d := contract.Diff(old, new)
	want := map[string]string{
		"a":    `argument "x": option(s) 1 removed; argument "x": option(s) 3 added; argument "y": type integer → string; argument "z" added, required`,
		"gone": "tool removed",
		"ann":  "annotation readOnlyHint: true → false",
	}
	if len(d) != len(want) {
		t.Fatalf("diff: %v", d)
	}
	for k, w := range want {
		if got := strings.Join(d[k], "; "); got != w {
			t.Errorf("%s: got %q, want %q", k, got, w)
		}
	}
	if all := contract.DiffAll(old, new); strings.Join(all["fresh"], "") != "tool added" {
		t.Errorf("DiffAll: %v", all)
	}
}
