package trace_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/mcpclient/mcptest"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/trace"
)

// TestHARValidatesInAnotherTool: the trace's network.har is HAR 1.2 as
// another tool reads it — har-validator (pinned in test/node), the HAR 1.2
// schema the HAR tools share — not only as Duet's own structs read it.
func TestHARValidatesInAnotherTool(t *testing.T) {
	t.Parallel()
	dir := mcptest.NodeDir(t)
	node := mcptest.Node(t, dir)
	meta, c := sample(t)
	zipped, _, err := trace.Build(meta, c, redact.NewSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := trace.Open(zipped)
	if err != nil {
		t.Fatal(err)
	}
	har, _, err := a.File("network.har")
	if err != nil {
		t.Fatal(err)
	}
	validate := func(har []byte) (string, error) {
		f := filepath.Join(t.TempDir(), "network.har")
		if err := os.WriteFile(f, har, 0o600); err != nil {
			t.Fatal(err)
		}
		script := `const v = require("har-validator"); const har = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
v.har(har).then(() => console.log("valid"), e => { console.log(JSON.stringify(e.errors || e.message)); process.exit(1); });`
		cmd := exec.CommandContext(t.Context(), node, "-e", script, f)
		cmd.Dir = dir // require() finds test/node/node_modules
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := validate(har); err != nil || !strings.Contains(out, "valid") {
		t.Fatalf("har-validator refuses the trace's HAR: %v\n%s\n%s", err, out, har)
	}
	// The check can fail: an entry without its request is refused.
	broken := strings.Replace(string(har), `"request"`, `"requesT"`, 1)
	if out, err := validate([]byte(broken)); err == nil {
		t.Fatalf("har-validator accepted a HAR without a request: %s", out)
	}
}
