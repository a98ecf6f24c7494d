package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs `duet demo` as the README's first command does: it must
// exit 0 with alice's run passed, bob's mcpCall step refused with
// MCP_SERVER_NOT_CONFIGURED, and the reports written.
func TestDemo(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	h := newHome(t)
	home := filepath.Join(t.TempDir(), "demo")
	out := h.must(0, "demo", "--home", home)
	for _, want := range []string{
		"serverKey mcp_", "PASSED: 2 passed", "MCP_SERVER_NOT_CONFIGURED", "As expected: bob's run started",
		"Authorization: Bearer duet_pat_", "DEMO OK",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	reports := regexp.MustCompile(`report: (\S+\.html)`).FindAllStringSubmatch(out, -1)
	if len(reports) != 2 {
		t.Fatalf("report paths: %v", reports)
	}
	html, err := os.ReadFile(reports[0][1])
	if err != nil || !strings.Contains(string(html), "data:image/png;base64,") {
		t.Fatalf("alice's report has no inline screenshot (%v)", err)
	}
}
