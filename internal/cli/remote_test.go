package cli_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/cli"
)

const remoteSuite = `task: {name: remote-ok}
cases:
  - {key: sum, title: arithmetic holds, steps: [{assert: "1 + 1 == 2"}]}
`

const remoteFailing = `task: {name: remote-bad}
cases:
  - {key: wrong, title: arithmetic is wrong, steps: [{assert: "1 + 1 == 3"}]}
`

// serveFor starts `duet serve` on h's home and returns its base URL; it
// stops with the test.
func serveFor(t *testing.T, h *duetHome) string {
	t.Helper()
	h.env["DUET_LOG_LEVEL"] = "info"
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--workers", "2"}, cli.Env{
			Getenv: func(k string) string { return h.env[k] },
			Stdin:  io.NopCloser(strings.NewReader("")), Stdout: io.Discard, Stderr: &errOut,
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	for {
		if m := servingAddr.FindStringSubmatch(errOut.String()); m != nil {
			return "http://" + m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d:\n%s", code, errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestRemoteMode is the command line against a Duet server (issue 26):
// the same commands, run once on this machine's DUET_HOME and once with
// --server URL (or DUET_SERVER_URL) and a personal token kept by `duet
// login`, give the same exit codes and the same answers — apply, run (the
// server's workers execute it; its steps stream from the REST progress
// events), run list, report, task list, a missing task, a usage error. In
// remote mode the command line opens no store: its DUET_HOME is never
// created. The token file is the user's alone; the token acts as its
// user, and --as someone else is refused.
func TestRemoteMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite.yaml")
	failing := filepath.Join(dir, "failing.yaml")
	os.WriteFile(suite, []byte(remoteSuite), 0o600)
	os.WriteFile(failing, []byte(remoteFailing), 0o600)
	flows := filepath.Join(dir, "flows.yaml")
	os.WriteFile(flows, []byte(remoteFlows), 0o600)
	tagged := filepath.Join(dir, "tagged.yaml")
	os.WriteFile(tagged, []byte(remoteTagged), 0o600)

	server := newHome(t)
	url := serveFor(t, server)
	token := strings.TrimSpace(server.must(0, "token", "create", "--as", "alice", "--name", "laptop"))

	local := newHome(t) // DUET_USER alice
	clientHome := filepath.Join(t.TempDir(), "never-created")
	remote := &duetHome{t: t, env: map[string]string{
		"DUET_HOME": clientHome, "XDG_CONFIG_HOME": filepath.Join(dir, "config"), "DUET_USER": "someone-else",
		"ALICE_TOKEN": token, "DUET_LOG_LEVEL": "warn",
	}}
	out := remote.must(0, "login", url, "--token-env", "ALICE_TOKEN")
	if !strings.Contains(out, "as alice") {
		t.Fatalf("login: %s", out)
	}
	if fi, err := os.Stat(filepath.Join(dir, "config", "duet", "tokens.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the token file: %v %v, want mode 0600", fi, err)
	}

	junit, jsonFile, html := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	type step struct {
		args []string
		code int
		want string // in stdout or stderr
	}
	script := []step{
		{[]string{"apply", "-f", suite}, 0, "remote-ok"},
		{[]string{"apply", "-f", failing}, 0, "remote-bad"},
		{[]string{"task", "list"}, 0, "remote-bad"},
		{[]string{"run", "remote-ok"}, 0, "ok   arithmetic holds > 1."},
		{[]string{"run", "list", "--task", "remote-ok"}, 0, "passed"},
		{[]string{"report", "latest", "--format", "junit"}, 0, "<testsuite"},
		{[]string{"run", "remote-bad"}, 1, "FAIL arithmetic is wrong > 1."},
		{[]string{"run", "show", "latest"}, 0, "failed"},
		// An unknown task is a configuration error (exit 2), in both modes.
		{[]string{"run", "no-such-task"}, 2, "NOT_FOUND"},
		{[]string{"run"}, 2, "usage:"},
		// The files of a CI job, its exit codes and its origin.
		{[]string{"run", "remote-ok", "--junit", junit, "--json=" + jsonFile, "--report", html, "--branch", "feature-x", "--commit", "abc123"}, 0, "wrote the html report to " + html},
		{[]string{"run", "remote-bad", "--junit", junit}, 1, "wrote the junit report to " + junit},
		{[]string{"run", "list", "--branch", "feature-x"}, 0, "passed"},
		{[]string{"run", "list", "--branch", "no-such-branch"}, 0, "no runs visible"},
		// Schedules, baselines, contract alerts and secrets.
		{[]string{"schedule", "add", "remote-ok", "--every", "1h", "--name", "hourly"}, 0, "of task remote-ok as alice"},
		{[]string{"schedule", "list", "--task", "remote-ok"}, 0, "hourly"},
		{[]string{"baseline", "list", "--task", "remote-ok"}, 0, "no baselines"},
		{[]string{"task", "check", "remote-ok"}, 0, "no dependency changes"},
		{[]string{"vault", "list"}, 0, "alice has no secrets"},
		{[]string{"vault", "delete", "NOPE"}, 1, "NOT_FOUND"},
		// Progress and run show print the run's hooks and what a flow
		// step ran under it, in both modes.
		{[]string{"apply", "-f", flows}, 0, "remote-flow"},
		{[]string{"run", "remote-flow"}, 0, "ok   loops > 1. repeat 2 times [2 iterations] (0 ms)\n         ok   #1 1. assert 1 + 1 == 2"},
		{[]string{"run", "show", "latest"}, 0, "ok   beforeAll > 1. assert 2 > 1"},
		// The run's selection by tag and text, and its retries.
		{[]string{"apply", "-f", tagged}, 0, "remote-tags"},
		{[]string{"run", "remote-tags"}, 1, "1 passed, 1 failed, 0 error, 0 cancelled of 2 case(s)"},
		{[]string{"run", "remote-tags", "--tag", "smoke"}, 0, "1 passed, 0 failed, 0 error, 0 cancelled of 1 case(s)"},
		{[]string{"run", "remote-tags", "--exclude-tag", "broken", "--exclude-tag", "other"}, 0, "1 passed, 0 failed, 0 error, 0 cancelled of 1 case(s)"},
		{[]string{"run", "remote-tags", "--grep", "GOOD SUM"}, 0, "1 passed, 0 failed, 0 error, 0 cancelled of 1 case(s)"},
		{[]string{"run", "remote-tags", "--tag", "nope"}, 2, "smoke"},
		{[]string{"run", "remote-tags", "--grep", "bad", "--retries", "1"}, 1, "0 passed, 1 failed, 0 error, 0 cancelled of 1 case(s)"},
		{[]string{"run", "show", "latest", "--json"}, 0, `"attempt": 2`},
		{[]string{"run", "remote-tags", "--retries", "99"}, 2, "retries must be from 0 to"},
		// The cases' compiled steps and the test agent, over REST too.
		{[]string{"scan", "--task", "remote-ok"}, 0, "0 errors"},
		{[]string{"generate", "--task", "remote-ok", "--goal", "add two numbers"}, 2, "LLM_NOT_CONFIGURED"},
	}
	for i, mode := range []struct {
		name string
		h    *duetHome
		pre  []string
	}{{"local", local, nil}, {"remote --server", remote, []string{"--server", url}}, {"remote DUET_SERVER_URL", remote, nil}} {
		if i == 2 {
			remote.env["DUET_SERVER_URL"] = url
		}
		for _, s := range script {
			if i == 2 && (s.args[0] == "apply" || s.args[0] == "schedule" && s.args[1] == "add") {
				continue // applied and scheduled already on that server
			}
			args := append(append([]string{}, mode.pre...), s.args...)
			code, stdout, stderr := mode.h.duet(t.Context(), args...)
			// Durations vary from run to run: compared as "(N ms)".
			if code != s.code || !strings.Contains(msRe.ReplaceAllString(stdout+stderr, "(N ms)"), msRe.ReplaceAllString(s.want, "(N ms)")) {
				t.Errorf("%s: duet %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", mode.name, strings.Join(args, " "), code, s.code, s.want, stdout, stderr)
			}
		}
	}
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), "<testsuite") || !strings.Contains(string(b), "arithmetic is wrong") {
		t.Errorf("the JUnit file of the remote run: %v %.300s", err, b)
	}
	if b, err := os.ReadFile(jsonFile); err != nil || !strings.Contains(string(b), `"exit"`) {
		t.Errorf("the JSON file of the remote run: %v %.300s", err, b)
	}
	// What works on this machine itself refuses a server, saying why.
	for _, args := range [][]string{{"gc"}, {"vault", "rotate"}} {
		if code, _, errOut := remote.duet(t.Context(), args...); code != 2 || !strings.Contains(errOut, "works on this machine, not on a Duet server (DUET_SERVER_URL set)") {
			t.Errorf("duet %s against a server: exit %d %s", strings.Join(args, " "), code, errOut)
		}
	}
	// The token's user is whom every command acts as there.
	if code, _, errOut := remote.duet(t.Context(), "task", "list", "--as", "bob"); code != 2 || !strings.Contains(errOut, "acts as the user of its token, alice") {
		t.Errorf("--as bob against the server: exit %d %s", code, errOut)
	}
	remote.env["DUET_TOKEN"] = "duet_pat_not-a-token"
	if code, _, errOut := remote.duet(t.Context(), "task", "list"); code != 1 || !strings.Contains(errOut, "UNAUTHENTICATED") || !strings.Contains(errOut, "duet login "+url) {
		t.Errorf("a bad DUET_TOKEN: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(clientHome); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("remote mode touched its DUET_HOME %s (%v): it must open no store", clientHome, err)
	}
}

// remoteFlows has a run hook and a loop: progress shows both.
const remoteFlows = `task:
  name: remote-flow
  beforeAll:
    - assert: "2 > 1"
cases:
  - key: loop
    title: loops
    steps:
      - repeat:
          times: 2
          steps:
            - assert: "1 + 1 == 2"
`

// remoteTagged has a passing and a failing case, told apart by tag and
// title.
const remoteTagged = `task: {name: remote-tags}
cases:
  - {key: good, title: good sum, tags: [smoke], steps: [{assert: "1 + 1 == 2"}]}
  - {key: bad, title: bad sum, tags: [broken], steps: [{assert: "1 + 1 == 3"}]}
`

// msRe matches a duration as the run's progress prints it.
var msRe = regexp.MustCompile(`\(\d+ ms\)`)
