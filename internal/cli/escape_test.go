package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet/internal/mcpclient/mcptest"
)

// planted is what another party writes to take over a terminal: set the
// window title (OSC 0), write the clipboard (OSC 52), clear the screen, and
// reverse the text that follows (U+202E RIGHT-TO-LEFT OVERRIDE).
const planted = "\x1b]0;pwned\x07 \x1b]52;c;Y3VybCBldmlsLnNofHNo\x07 \x1b[2J \u202eexe.txt"

// rawControl returns the first character of out that a terminal would act
// on or that reorders text — anything below U+0020 but the newline and the
// tab, DEL, C1 controls, the bidirectional controls — and whether there is
// one.
func rawControl(out string) (rune, bool) {
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0,
			r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069', r == '\u200e' || r == '\u200f':
			return r, true
		}
	}
	return 0, false
}

// TestForeignTextEscapedEverywhere: text that someone else wrote — a
// registered server's instructions, its tool's description and its tool's
// output, a colleague's shared skill, a shared task and case — reaches the
// terminal escaped from every command that prints it, in text and in JSON
// (where the escapes are JSON's own, so the JSON still reads the same).
func TestForeignTextEscapedEverywhere(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	e := &duetEnv{tr: &transcript{}, vars: map[string]string{"DUET_HOME": home, "DUET_MCP_ALLOW_LOOPBACK": "true", "HOME": home}}

	srv := mcp.NewServer(&mcp.Implementation{Name: "crm", Version: "1.0.0"}, &mcp.ServerOptions{Instructions: "instructions " + planted})
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup", Description: "Looks up a customer.\n" + planted, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "result " + planted}}}, nil, nil
		})
	url := mcptest.Start(t, mcptest.Streamable(srv, false, false))
	e.must(t, "server", "add", "--as", "alice", "--name", "crm", "--url", url)

	// bob's skill, shared with alice.
	e.must(t, "asset", "add", "skill", "checkout", "--as", "bob", "--share-with", "alice",
		"--description", "pay "+planted, "--text", "Step one.\r\n"+planted+"\r\nStep two.\r\n")
	// bob's task, shared with alice.
	suite := filepath.Join(home, "suite.yaml")
	src := "task:\n  name: shop\n  description: \"desc " + strings.ReplaceAll(strings.ReplaceAll(planted, "\x1b", `\e`), "\x07", `\a`) + "\"\n" +
		"cases:\n  - key: home\n    title: \"title \\e[2J\\u202e\"\n    steps:\n      - assert: \"true\"\n"
	if err := os.WriteFile(suite, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must(t, "apply", "-f", suite, "--as", "bob")
	e.must(t, "task", "share", "shop", "--with", "alice", "--as", "bob")

	commands := [][]string{
		{"asset", "list"}, {"asset", "list", "--json"}, {"asset", "list", "--kind", "mcp-tool"},
		{"asset", "show", "skill", "bob/checkout"}, {"asset", "show", "skill", "bob/checkout", "--json"},
		{"asset", "show", "mcp-server", "crm"}, {"asset", "show", "mcp-server", "crm", "--json"},
		{"asset", "show", "mcp-tool", "crm/lookup"}, {"asset", "show", "mcp-tool", "crm/lookup", "--json"},
		{"server", "show", "crm"}, {"server", "show", "crm", "--json"}, {"server", "list"}, {"server", "sync", "crm"},
		{"server", "call", "crm", "lookup"}, {"server", "call", "crm", "lookup", "--json"},
		{"task", "list"}, {"task", "show", "shop"},
	}
	for _, args := range commands {
		args = append(args, "--as", "alice")
		out, errs, code := e.run(t, args...)
		if code != 0 && !strings.Contains(strings.Join(args, " "), "--json") {
			t.Errorf("duet %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
		}
		if r, ok := rawControl(out + errs); ok {
			t.Errorf("duet %s printed %U raw:\n%q", strings.Join(args, " "), r, out+errs)
		}
	}
	// Escaped, not dropped: a person can still see what was written.
	out := e.must(t, "asset", "show", "skill", "bob/checkout", "--as", "alice")
	for _, want := range []string{`pay \x1b]0;pwned\a \x1b]52;c;Y3VybCBldmlsLnNofHNo\a \x1b[2J \u202eexe.txt`, "Step one.\n", "\nStep two.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("asset show printed:\n%s\nwant %q in it", out, want)
		}
	}
	out = e.must(t, "asset", "show", "skill", "bob/checkout", "--as", "alice", "--json")
	if !strings.Contains(out, `\u001b]0;pwned\u0007`) || !strings.Contains(out, `\u202eexe.txt`) {
		t.Errorf("asset show --json printed:\n%s\nwant the sequences as JSON escapes", out)
	}
}
