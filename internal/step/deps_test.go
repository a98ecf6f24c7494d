package step_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStepImportsOnlyLeaves keeps the registry where it belongs: between
// the compiler and the engine, importing neither (nor a driver); of Duet's
// packages it uses only the root and the leaves eval, redact, llm (the AI steps' model client) and pagejs (the JavaScript it shares with the browser driver).
func TestStepImportsOnlyLeaves(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/duet-test/duet/internal/step").Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/duet-test/duet":                 true,
		"github.com/duet-test/duet/internal/step":   true,
		"github.com/duet-test/duet/internal/eval":   true,
		"github.com/duet-test/duet/internal/redact": true,
		"github.com/duet-test/duet/internal/llm":    true,
		"github.com/duet-test/duet/internal/pagejs": true,
	}
	for _, d := range strings.Fields(string(out)) {
		if strings.HasPrefix(d, "github.com/duet-test/duet") && !allowed[d] {
			t.Errorf("internal/step depends on %s", d)
		}
	}
}
