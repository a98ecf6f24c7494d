package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/closedport"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// These tests pin what a new user met in the first hour (issue 18): the
// command line says whom it acts as, its hints work when pasted, and usage
// mistakes are exit 2 with the usage.

// apiSmoke is examples/api-smoke.yaml, the README's first suite.
func apiSmoke(t *testing.T) string {
	t.Helper()
	return filepath.Join("..", "..", "examples", "api-smoke.yaml")
}

// osUserHome is a DUET_HOME whose commands act as the operating-system
// user carol: DUET_USER is not set.
func osUserHome(t *testing.T) *duetHome {
	h := newHome(t)
	delete(h.env, "DUET_USER")
	h.env["USER"] = "carol"
	return h
}

func TestUsageErrorsExit2WithUsage(t *testing.T) {
	t.Parallel()
	h := osUserHome(t)
	for _, tt := range []struct {
		args []string
		want []string // in stderr
	}{
		{[]string{"run"}, []string{"error: duet run: missing TASK", "usage: duet run TASK", "duet run --help"}},
		{[]string{"report"}, []string{"missing RUN_ID", "usage: duet report RUN_ID"}},
		{[]string{"server", "call", "orders"}, []string{"duet server call: missing TOOL", "usage: duet server call SERVER TOOL"}},
		{[]string{"run", "a", "b"}, []string{`got an extra argument "b"`}},
		{[]string{"task", "list", "x"}, []string{`duet task list takes no arguments, got "x"`}},
		{[]string{"task", "bogus"}, []string{`unknown command "bogus" for "duet task"`, "usage: duet task COMMAND (", "list, share, show", "duet task --help"}},
		{[]string{"server", "bogus"}, []string{`unknown command "bogus" for "duet server"`, "usage: duet server COMMAND (add, "}},
		{[]string{"server", "sho"}, []string{"did you mean show?"}},
		{[]string{"vault", "bogus"}, []string{`unknown command "bogus" for "duet vault"`}},
		{[]string{"bogus"}, []string{`unknown command "bogus" for "duet"`, "duet --help"}},
		{[]string{"config", "--bogus"}, []string{"unknown flag: --bogus", "usage: duet config"}},
	} {
		code, out, errOut := h.duet(t.Context(), tt.args...)
		if code != 2 {
			t.Errorf("duet %s: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", strings.Join(tt.args, " "), code, out, errOut)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("duet %s: stderr lacks %q:\n%s", strings.Join(tt.args, " "), w, errOut)
			}
		}
	}
	// A group alone shows its help; that is not a mistake.
	if code, out, _ := h.duet(t.Context(), "task"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("duet task: exit %d, want 0 and the help:\n%s", code, out)
	}
}

// TestNotFoundNamesTheActingUser: alice's task, looked up by the
// operating-system user (the README's stumble), is NOT_FOUND with a note
// saying whom Duet looked as and how to act as someone else.
func TestNotFoundNamesTheActingUser(t *testing.T) {
	t.Parallel()
	h := osUserHome(t)
	h.must(0, "apply", "-f", apiSmoke(t), "--as", "alice")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "api-smoke"}, "note: looked as carol (the operating-system user); to act as another user, add --as USER or set DUET_USER"},
		{[]string{"report", "run_06h2ync609bxr49hdrbae6ppq0"}, "note: looked as carol (the operating-system user)"},
		{[]string{"run", "api-smoke", "--as", "bob"}, "note: looked as bob (--as): only what bob owns or was shared with is visible"},
	} {
		code, _, errOut := h.duet(t.Context(), tt.args...)
		want := 1
		if tt.args[0] == "run" {
			want = 2 // duet run: an unknown task is a usage error (docs/ci.md)
		}
		if code != want || !strings.Contains(errOut, "error: NOT_FOUND: ") || !strings.Contains(errOut, tt.want) {
			t.Errorf("duet %s: exit %d, want %d, NOT_FOUND and %q:\n%s", strings.Join(tt.args, " "), code, want, tt.want, errOut)
		}
	}
	h.env["DUET_USER"] = "dave"
	if code, _, errOut := h.duet(t.Context(), "task", "show", "api-smoke"); code != 1 || !strings.Contains(errOut, "looked as dave (DUET_USER)") {
		t.Errorf("task show as DUET_USER: exit %d:\n%s", code, errOut)
	}
	delete(h.env, "DUET_USER")

	// An empty list says whom it was listed as.
	code, out, errOut := h.duet(t.Context(), "task", "list")
	if code != 0 || !strings.Contains(out, "0 task(s) visible to carol") || !strings.Contains(errOut, "listed as carol (the operating-system user)") {
		t.Errorf("task list as carol: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = h.duet(t.Context(), "task", "list", "--as", "alice")
	if code != 0 || !strings.Contains(out, "1 task(s) visible to alice") || errOut != "" {
		t.Errorf("task list --as alice: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

var reportHintRe = regexp.MustCompile("report: (duet report run_[0-9a-z]+ [^\n]*?)   ")

// TestRunHintWorksWhenPasted: the command `duet run` prints for the report
// is run exactly as printed, and works.
func TestRunHintWorksWhenPasted(t *testing.T) {
	t.Parallel()
	h := osUserHome(t)
	suite := filepath.Join(t.TempDir(), "api.yaml")
	src, err := os.ReadFile(apiSmoke(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suite, []byte(strings.ReplaceAll(string(src), "http://127.0.0.1:8431", sampletest.Shop(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	h.must(0, "apply", "-f", suite, "--as", "alice")
	out := h.must(0, "run", "api-smoke", "--as", "alice")
	m := reportHintRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no report hint in:\n%s", out)
	}
	if !strings.Contains(m[1], " --as alice ") {
		t.Errorf("hint %q: want --as alice in it (carol is the default user)", m[1])
	}
	args := strings.Fields(m[1])[1:]
	dir := t.TempDir()
	for i, a := range args {
		if a == "report.html" {
			args[i] = filepath.Join(dir, a)
		}
	}
	if code, out, errOut := h.duet(t.Context(), args...); code != 0 || !strings.Contains(out, "wrote the html report") {
		t.Errorf("pasted %q: exit %d\n%s%s", m[1], code, out, errOut)
	}
	// As the default user, the hint needs no --as.
	h.env["USER"] = "alice"
	out = h.must(0, "run", "api-smoke")
	if m := reportHintRe.FindStringSubmatch(out); m == nil || strings.Contains(m[1], "--as") {
		t.Errorf("hint as the default user: %q, want no --as", m)
	}
}

// TestTokenCreateTakesAs: --as like every other command, --user still.
func TestTokenCreateTakesAs(t *testing.T) {
	t.Parallel()
	h := osUserHome(t)
	for _, flag := range []string{"--as", "--user"} {
		code, out, errOut := h.duet(t.Context(), "token", "create", flag, "alice", "--name", flag)
		if code != 0 || !strings.HasPrefix(out, "duet_pat_") || !strings.Contains(errOut, "for alice created") {
			t.Errorf("token create %s alice: exit %d\n%s%s", flag, code, out, errOut)
		}
	}
	out := h.must(0, "token", "list", "--as", "alice")
	if !strings.Contains(out, "--as") || !strings.Contains(out, "--user") {
		t.Errorf("token list --as alice: want both tokens:\n%s", out)
	}
	if code, _, errOut := h.duet(t.Context(), "token", "create", "--as", "bad user"); code != 2 || !strings.Contains(errOut, "--as") {
		t.Errorf("token create with a bad user id: exit %d: %s", code, errOut)
	}
	// Without --as, DUET_USER, as every command (it used to demand --as).
	h.env["DUET_USER"] = "carol"
	if code, out, errOut := h.duet(t.Context(), "token", "create", "--name", "from DUET_USER"); code != 0 || !strings.HasPrefix(out, "duet_pat_") || !strings.Contains(errOut, "for carol created") {
		t.Errorf("DUET_USER=carol token create: exit %d\n%s%s", code, out, errOut)
	}
}

// TestConfigShowsEverySettingOnce: one labelled table, every setting of
// docs/configuration.md once, secrets masked.
func TestConfigShowsEverySettingOnce(t *testing.T) {
	t.Parallel()
	h := osUserHome(t)
	h.env["DUET_LLM_API_KEY"] = "sk-do-not-print-me"
	h.env["DUET_LLM_BASE_URL"] = "http://127.0.0.1:11434/v1"
	out := h.must(0, "config")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "SETTING") || !strings.Contains(lines[0], "VALUE") || !strings.Contains(lines[0], "FROM") {
		t.Errorf("first line %q: want the column labels", lines[0])
	}
	seen := map[string]int{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "DUET_") {
			seen[f[0]]++
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `(DUET_[A-Z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 40 {
		t.Fatalf("docs/configuration.md has %d rows", len(rows))
	}
	for _, r := range rows {
		if seen[r[1]] != 1 {
			t.Errorf("%s: shown %d times, want once", r[1], seen[r[1]])
		}
	}
	if len(seen) != len(rows) {
		t.Errorf("shown %d settings, documented %d", len(seen), len(rows))
	}
	for _, want := range []string{"DUET_USER", "carol", "the operating-system user", "DUET_LLM_BASE_URL", "http://127.0.0.1:11434/v1", "DUET_MASTER_KEY"} {
		if !strings.Contains(out, want) {
			t.Errorf("duet config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-do-not-print-me") {
		t.Errorf("duet config printed a secret:\n%s", out)
	}
}

var backquoted = regexp.MustCompile("`(duet [^`]*)`")

// pasted runs a command Duet printed, as a shell would split it (the
// commands printed here quote nothing that needs a real shell).
func (h *duetHome) pasted(line string) (int, string, string) {
	h.t.Helper()
	args := strings.Fields(line)
	if args[0] != "duet" {
		h.t.Fatalf("%q is not a duet command", line)
	}
	return h.duet(h.t.Context(), args[1:]...)
}

// TestServerAddConflictNamesTheWayOut: registering an address a second
// time under another name names the first registration, and the commands
// printed as the ways out work when pasted.
func TestServerAddConflictNamesTheWayOut(t *testing.T) {
	t.Parallel()
	h := osUserHome(t)
	h.env["DUET_MCP_ALLOW_LOOPBACK"] = "true"
	h.env["ORDERS_TOKEN"] = "s3cret-token-1234"
	first := []string{"server", "add", "--as", "alice", "--name", "order-query", "--url", "http://127.0.0.1:8432/mcp", "--bearer-token-env", "ORDERS_TOKEN", "--no-sync"}
	second := []string{"server", "add", "--as", "alice", "--name", "orders", "--url", "http://127.0.0.1:8432/mcp", "--bearer-token-env", "ORDERS_TOKEN", "--no-sync"}
	h.must(0, first...)
	code, _, errOut := h.duet(t.Context(), second...)
	if code != 1 || !strings.Contains(errOut, `error: CONFLICT: you registered this address already, as "order-query"`) {
		t.Fatalf("second registration: exit %d:\n%s", code, errOut)
	}
	hints := backquoted.FindAllStringSubmatch(errOut, -1)
	if len(hints) != 3 {
		t.Fatalf("want 3 commands to paste (show, replace, remove):\n%s", errOut)
	}
	for _, want := range []string{"duet server show --as alice order-query", "--name order-query", "duet server remove --as alice order-query"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("hints lack %q:\n%s", want, errOut)
		}
	}
	for _, hint := range hints[:2] { // show; re-register with --replace
		if code, out, errOut := h.pasted(hint[1]); code != 0 {
			t.Errorf("pasted %q: exit %d\n%s%s", hint[1], code, out, errOut)
		}
	}
	if code, out, errOut := h.pasted(hints[2][1]); code != 0 {
		t.Fatalf("pasted %q: exit %d\n%s%s", hints[2][1], code, out, errOut)
	}
	h.must(0, second...) // "then run this command again"

	// The same name again: the way out is --replace.
	code, _, errOut = h.duet(t.Context(), second...)
	m := backquoted.FindStringSubmatch(errOut)
	if code != 1 || m == nil || !strings.HasSuffix(m[1], " --replace") {
		t.Fatalf("same name again: exit %d, want a --replace command:\n%s", code, errOut)
	}
	if code, out, errOut := h.pasted(m[1]); code != 0 {
		t.Errorf("pasted %q: exit %d\n%s%s", m[1], code, out, errOut)
	}
}

// TestReadOnlyHome: on a DUET_HOME the user cannot write, commands that
// only read work (the database is opened read-only) and one that writes
// says which directory to make writable. As root, whom permission bits do
// not stop, the test runs itself again in a mount namespace where
// DUET_HOME is a read-only mount.
func TestReadOnlyHome(t *testing.T) {
	home := os.Getenv("DUET_TEST_READONLY_HOME") // set when run read-only
	h := osUserHome(t)
	if home == "" {
		t.Parallel()
		// The suite at an address where nothing answers (held by the test:
		// the README's sample shop may be running on the suite's own
		// 127.0.0.1:8431): a failed run to report on.
		src, err := os.ReadFile(apiSmoke(t))
		if err != nil {
			t.Fatal(err)
		}
		suite := filepath.Join(t.TempDir(), "api-smoke.yaml")
		if err := os.WriteFile(suite, []byte(strings.ReplaceAll(string(src), "http://127.0.0.1:8431", closedport.URL(t))), 0o600); err != nil {
			t.Fatal(err)
		}
		h.must(0, "apply", "-f", suite, "--as", "alice")
		h.must(1, "run", "api-smoke", "--as", "alice")
		home = h.env["DUET_HOME"]
		if os.Geteuid() == 0 {
			if _, err := exec.LookPath("unshare"); err != nil {
				t.Skipf("root ignores permission bits and there is no unshare to mount %s read-only: %v", home, err)
			}
			cmd := exec.Command("unshare", "-m", "sh", "-c", `mount --bind -o ro "$1" "$1" && exec "$2" -test.run='^TestReadOnlyHome$' -test.count=1 -test.v`, "sh", home, os.Args[0])
			cmd.Env = append(os.Environ(), "DUET_TEST_READONLY_HOME="+home)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlyHome") {
				t.Fatalf("on a read-only mount: %v\n%s", err, out)
			}
			return
		}
		filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				os.Chmod(p, 0o400)
			}
			return nil
		})
		os.Chmod(filepath.Join(home, "artifacts"), 0o500)
		os.Chmod(home, 0o500)
		t.Cleanup(func() { os.Chmod(home, 0o700) })
	}
	h.env["DUET_HOME"] = home
	out := h.must(0, "run", "list", "--as", "alice")
	runID := strings.Fields(out)[0]
	for _, args := range [][]string{
		{"task", "list", "--as", "alice"},
		{"task", "show", "api-smoke", "--as", "alice"},
		{"run", "show", runID, "--as", "alice"},
		{"report", runID, "--as", "alice", "--format", "json"},
		{"audit"},
		{"server", "list", "--as", "alice"},
	} {
		if code, out, errOut := h.duet(t.Context(), args...); code != 0 {
			t.Errorf("duet %s on a read-only DUET_HOME: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
	code, _, errOut := h.duet(t.Context(), "apply", "-f", apiSmoke(t), "--as", "alice")
	if code != 2 || !strings.Contains(errOut, "for writing") || !strings.Contains(errOut, "set DUET_HOME to a writable directory") {
		t.Errorf("apply on a read-only DUET_HOME: exit %d, want 2 naming what to fix:\n%s", code, errOut)
	}
}

// TestFailedAssertionShowsValues: the operands of a failed assertion are in
// the run's progress and in its report (issue 18, point 6).
func TestFailedAssertionShowsValues(t *testing.T) {
	t.Parallel()
	h := osUserHome(t)
	h.apply(`
task: {name: status-check, baseURL: ` + sampletest.Shop(t) + `}
cases:
  - key: shipped
    title: A1001 has shipped
    steps:
      - http: {url: /api/orders/A1001, saveAs: o}
      - assert: o.body.status == "no-such-status"
`)
	code, out, _ := h.duet(t.Context(), "run", "status-check", "--as", "carol")
	want := regexp.MustCompile(`ASSERTION_FAILED: expected o.body.status == "no-such-status"; o.body.status is "[a-z]+"`)
	if code != 1 || !want.MatchString(out) {
		t.Fatalf("run: exit %d, want 1 and %s:\n%s", code, want, out)
	}
	rep := h.must(0, "report", "latest", "--as", "carol", "--format", "json")
	inReport := regexp.MustCompile(`expected o.body.status == "no-such-status"; o.body.status is "[a-z]+"`)
	if !inReport.MatchString(strings.ReplaceAll(rep, `\"`, `"`)) {
		t.Errorf("the report lacks the operand's value:\n%.3000s", rep)
	}
}
