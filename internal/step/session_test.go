package step_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/secret"
	"github.com/duet-test/duet/internal/sqlite"
	"github.com/duet-test/duet/internal/vault"
)

// sessionSuite signs in to the sample shop once (remember me, and a token
// the page keeps in localStorage) and saves the session; the second case
// starts signed in from it.
const sessionSuite = `
task: {name: sessions, baseURL: BASE}
cases:
  - key: sign-in
    title: sign in once
    steps:
      - open: /login
      - fill: {label: Username, value: qa_admin_7}
      - fill: {label: Password, value: pw-not-checked}
      - check: {label: Remember me}
      - click: {role: button, name: Sign in}
      - assertText: {selector: "#user", equals: Signed in as qa_admin_7}
      - evaluate: "localStorage.setItem('api_token', 'tok-' + crypto.randomUUID()), true"
      - saveSession: admin
  - key: signed-in
    title: start signed in
    session: admin
    steps:
      - open: /
      - assertText: {selector: "#user", equals: Signed in as qa_admin_7}
      - evaluate: {expression: "localStorage.getItem('api_token')", as: token}
      - assert: token startsWith "tok-" && len(token) > 30
`

// runCases runs the executions of cases (by key) of the applied suite as
// user, with the engine's saved sessions in keeper, and returns them.
func runCases(t *testing.T, db *sqlite.DB, res *duet.ApplyResult, suite *duet.Suite, user string, keeper engine.SessionKeeper, keys ...string) []*duet.Execution {
	t.Helper()
	return runCasesOn(t, app.NewBrowser(pool(t)), 0, db, res, suite, user, keeper, keys...)
}

// runCasesOn is runCases on the browser b, with the engine's step timeout
// (0: its default).
func runCasesOn(t *testing.T, b engine.Browser, stepTimeout time.Duration, db *sqlite.DB, res *duet.ApplyResult, suite *duet.Suite, user string, keeper engine.SessionKeeper, keys ...string) []*duet.Execution {
	t.Helper()
	run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: user, CallSource: duet.SourceCLI}
	var xs []*duet.Execution
	for _, k := range keys {
		for i, c := range suite.Cases {
			if c.Key == k {
				xs = append(xs, &duet.Execution{CaseID: res.Cases[i].ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: res.Cases[i].Version, Steps: c.Steps})
			}
		}
	}
	if _, _, err := db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: xs}); err != nil {
		t.Fatal(err)
	}
	claimed, err := db.ClaimRunByID(t.Context(), run.ID, "test-worker", time.Minute)
	if err != nil || claimed == nil {
		t.Fatalf("claim: %v", err)
	}
	e := engine.New(db, engine.Options{Browser: b, Sessions: keeper, StepTimeout: stepTimeout})
	if err := e.Execute(context.WithoutCancel(t.Context()), duet.LeaseOf(claimed, "test-worker"), claimed, nil); err != nil {
		t.Fatal(err)
	}
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	return execs
}

// TestSessions: a case signs in to the sample shop and saves the session;
// the next case of the run starts signed in (cookies and localStorage).
// The session is stored sealed, its values never in the run's results;
// another run — another user's, or the same user's next one — cannot use
// it.
func TestSessions(t *testing.T) {
	t.Parallel()
	pool(t)
	base := sampletest.Shop(t)
	suite, err := compiler.CompileSuite(t.Context(), []byte(strings.Replace(sessionSuite, "BASE", base, 1)), "t.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st := suite.Cases[1].Steps[0]; st.Kind != "session" || st.Browser.Session != "admin" {
		t.Fatalf("the case's session: key compiles to a first session step: %+v", st)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	res, err := db.ApplySuite(t.Context(), "alice", suite)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := vault.GenerateKey()
	kr, _ := vault.NewKeyring(key)
	keeper := secret.NewSessions(db, secret.New(db, func() (*vault.Keyring, error) { return kr, nil }))

	execs := runCases(t, db, res, suite, "alice", keeper, "sign-in", "signed-in")
	for _, x := range execs {
		if x.Status != duet.StatusPassed {
			t.Fatalf("alice's run: %s: got %s", x.CaseKey, describe(x))
		}
	}
	// The session is stored sealed; nothing the run keeps shows its
	// values (the cookies, the token).
	saved, err := db.FindSavedSession(t.Context(), execs[0].RunID, "admin")
	if err != nil || strings.Contains(string(saved.Ciphertext), "tok-") || saved.Owner != "alice" {
		t.Fatalf("stored: %+v %v", saved, err)
	}
	plain, err := keeper.LoadSession(t.Context(), execs[0].RunID, "alice", "admin")
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Cookies []struct{ Name, Value string }
		Origins []struct{ LocalStorage map[string]string }
	}
	if err := json.Unmarshal(plain, &state); err != nil || len(state.Origins) != 1 || !strings.HasPrefix(state.Origins[0].LocalStorage["api_token"], "tok-") {
		t.Fatalf("the saved state: %s %v", plain, err)
	}
	values := []string{state.Origins[0].LocalStorage["api_token"]}
	for _, c := range state.Cookies {
		if c.Name == "shop_user" {
			values = append(values, c.Value)
		}
	}
	if len(values) != 2 {
		t.Fatalf("the saved state has no shop_user cookie: %s", plain)
	}
	results, _ := json.Marshal([][]*duet.StepResult{execs[0].Results, execs[1].Results})
	for _, v := range values {
		if strings.Contains(string(results), v) {
			t.Errorf("the run's results show the session's value %q: %s", v, results)
		}
	}

	// Without the saved session the case is not signed in: the key is
	// what signs it in.
	for _, user := range []string{"bob", "alice"} {
		execs := runCasesOn(t, app.NewBrowser(pool(t)), 3*time.Second, db, res, suite, user, keeper, "signed-in")
		if r := execs[0].Results[0]; execs[0].Status == duet.StatusPassed || r.ErrorCode != duet.CodeSessionNotFound || !strings.Contains(r.ErrorMessage, "saveSession: admin") {
			t.Errorf("%s's next run uses the session: got %s", user, describe(execs[0]))
		}
	}
}

// TestSessionCompile: saveSession and session (a step, or a case's key)
// name a session with line:col errors.
func TestSessionCompile(t *testing.T) {
	t.Parallel()
	head := "task: {name: t, baseURL: http://h}\ncases:\n  - title: c\n"
	for src, want := range map[string]string{
		"    steps:\n      - saveSession: admin\n":                      "t.yaml:5:22: saveSession needs a page",
		"    steps:\n      - open: /\n      - saveSession: {name: a}\n": "t.yaml:6:22: saveSession needs the session's name",
		"    steps:\n      - open: /\n      - saveSession: 1admin\n":    `t.yaml:6:22: session name "1admin"`,
		"    session: a b\n    steps:\n      - open: /\n":               `t.yaml:4:14: session name "a b"`,
		"    session: [a]\n    steps:\n      - open: /\n":               "t.yaml:4:14: session must be a string or a mapping",
		"    steps:\n      - session: \"\"\n":                           `session name ""`,
	} {
		_, err := compiler.CompileSuite(t.Context(), []byte(head+src), "t.yaml", compiler.Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", src, err, want)
		}
	}
	src := `task: {name: t, baseURL: http://h}
flows:
  login:
    steps:
      - saveSession: admin
cases:
  - title: c
    steps:
      - open: /
      - use: login
  - title: d
    session: admin
    beforeEach:
      - open: /
    steps:
      - saveSession: again
`
	s, err := compiler.CompileSuite(t.Context(), []byte(src), "t.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	steps := s.Cases[1].Steps
	if len(steps) != 3 || steps[0].Kind != "session" || steps[0].Name != "session admin" || steps[0].Line != 12 || steps[1].Kind != duet.StepOpen || steps[2].Browser.Session != "again" {
		t.Errorf("got %+v", steps)
	}
}
