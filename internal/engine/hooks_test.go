package engine_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/secret"
	"github.com/duet-test/duet/internal/vault"
)

// startRunIn starts a run of every case of task in environment, each
// execution with its case's data row (as start_test_run does).
func startRunIn(t *testing.T, db interface {
	duet.CaseStore
	duet.RunStore
}, task *duet.Task, user, environment string) *duet.Run {
	t.Helper()
	cases, _, _, err := db.FindCases(t.Context(), duet.CaseFilter{TaskID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	run := &duet.Run{TaskID: task.ID, TriggeredBy: user, CallSource: duet.SourceCLI, Environment: environment}
	var execs []*duet.Execution
	for _, c := range cases {
		execs = append(execs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps, TimeoutMs: c.TimeoutMs, Row: c.Row})
	}
	if _, _, err := db.CreateRun(t.Context(), duet.StartRunParams{Run: run, Executions: execs}); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestHooksEnvironmentRowsSecrets: a run in an environment runs beforeAll
// once (its variables seen by every case), beforeEach and afterEach
// around each case — afterEach after a failed case too —, one execution
// per data row named from it, afterAll at the end; a secret is read from
// the executor's vault and redacted by value from all the run keeps, and
// a missing one fails its step with SECRET_NOT_FOUND naming it.
func TestHooksEnvironmentRowsSecrets(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	rec := newRecorder(t)
	kr := keyring(t)
	secrets := secret.New(db, func() (*vault.Keyring, error) { return kr, nil })
	if _, err := secrets.Set(t.Context(), "alice", "PW", "s3cr3t-pw"); err != nil {
		t.Fatal(err)
	}
	res := apply(t, db, "alice", `
task:
  name: hooks
  baseURL: http://127.0.0.1:9/unused
  defaultEnvironment: prod
  environments:
    prod: {baseURL: http://127.0.0.1:9/prod}
    staging: {baseURL: `+rec.srv.URL+`, vars: {tier: stage}}
  beforeAll:
    - http: {method: POST, url: "/data?op=beforeAll-${env.tier}", saveAs: setup}
  beforeEach:
    - http: {method: POST, url: "/data?op=beforeEach"}
  afterEach:
    - http: {method: POST, url: "/data?op=afterEach"}
  afterAll:
    - http: {method: POST, url: "/data?op=afterAll"}
cases:
  - key: login
    title: "login as ${row.user}"
    each:
      - {user: alice, ok: true}
      - {user: bob, ok: false}
    steps:
      - http: {method: POST, url: "/data?op=case-${row.user}", json: {pw: "${secrets.PW}"}, saveAs: r}
      - set: {echoed: secrets.PW}
      - assert: row.ok && setup.body.token == "tok-beforeAll-stage"
  - key: missing
    title: a secret nobody set
    steps:
      - http: {method: POST, url: "/data?op=${secrets.NOPE}"}
`)
	_, _, _ = worker(t, db, engine.Options{Secrets: secrets}, engine.WorkerOptions{})
	run := startRunIn(t, db, res.Task, "alice", "staging")
	final := waitFinal(t, db, run.ID)

	want := []string{"beforeAll-stage",
		"beforeEach", "case-alice", "afterEach",
		"beforeEach", "case-bob", "afterEach",
		"beforeEach", "afterEach",
		"afterAll"}
	if got := rec.ops(); !slices.Equal(got, want) {
		t.Errorf("calls:\n got %v\nwant %v", got, want)
	}
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil {
		t.Fatal(err)
	}
	byTitle := map[string]*duet.Execution{}
	for _, x := range execs {
		byTitle[x.CaseTitle] = x
	}
	alice, bob, missing := byTitle["login as alice"], byTitle["login as bob"], byTitle["a secret nobody set"]
	if alice == nil || bob == nil || missing == nil {
		t.Fatalf("executions: got %v", slices.Collect(func(yield func(string) bool) {
			for k := range byTitle {
				yield(k)
			}
		}))
	}
	if alice.Status != duet.StatusPassed || alice.Row["user"] != "alice" {
		t.Errorf("alice: got %s row %v", describeTree(alice), alice.Row)
	}
	if bob.Status != duet.StatusFailed || bob.ErrorCode != duet.CodeAssertionFailed {
		t.Errorf("bob: got %s", describeTree(bob))
	}
	// bob's afterEach ran after the failed assert, and is shown as a hook step.
	if last := bob.Results[len(bob.Results)-1]; last.Hook != duet.HookAfterEach || last.Status != duet.StatusPassed {
		t.Errorf("bob's afterEach: got %s", describeTree(bob))
	}
	if missing.Status != duet.StatusFailed || missing.ErrorCode != duet.CodeSecretNotFound || !strings.Contains(missing.ErrorMessage, "NOPE") {
		t.Errorf("missing secret: got %s", describeTree(missing))
	}
	got, err := db.FindRunByID(t.Context(), "alice", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Environment != "staging" || len(got.Hooks) != 2 || got.Hooks[0].Hook != duet.HookBeforeAll || got.Hooks[1].Hook != duet.HookAfterAll ||
		got.Hooks[0].Status != duet.StatusPassed || got.Hooks[1].Status != duet.StatusPassed {
		t.Errorf("run: environment %q hooks %+v", got.Environment, got.Hooks)
	}
	if final.Status != duet.StatusFailed {
		t.Errorf("run status: got %s", final.Status)
	}
	// The secret's value is nowhere in what the run keeps.
	b, _ := json.Marshal([]any{got, execs})
	if strings.Contains(string(b), "s3cr3t-pw") {
		t.Errorf("the secret's value is stored: %s", b)
	}
	if alice.Vars["echoed"] != redact.Mask {
		t.Errorf("a variable holding the secret: got %v", alice.Vars["echoed"])
	}
}

// TestAfterHooksRunAfterCancel: a run cancelled while a case's step is in
// flight still runs that case's afterEach and the task's afterAll (the
// cleanup of test data made through the run), and a failing beforeAll
// skips every case with HOOK_FAILED.
func TestAfterHooksRunAfterCancel(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	rec := newRecorder(t)
	res := apply(t, db, "alice", `
task:
  name: cancel-hooks
  baseURL: `+rec.srv.URL+`
  afterEach:
    - http: {method: POST, url: "/data?op=afterEach"}
  afterAll:
    - http: {method: POST, url: "/data?op=afterAll"}
cases:
  - title: holds
    steps:
      - http: {url: /hold}
`)
	_, _, _ = worker(t, db, engine.Options{}, engine.WorkerOptions{})
	run := startRunIn(t, db, res.Task, "alice", "")
	<-rec.held
	if _, err := db.RequestCancel(t.Context(), "alice", run.ID); err != nil {
		t.Fatal(err)
	}
	final := waitFinal(t, db, run.ID)
	if final.Status != duet.StatusCancelled {
		t.Errorf("run: got %s", final.Status)
	}
	if got := rec.ops(); !slices.Equal(got, []string{"afterEach", "afterAll"}) {
		t.Errorf("calls after the cancel: got %v", got)
	}

	res = apply(t, db, "alice", `
task:
  name: broken-setup
  baseURL: `+rec.srv.URL+`
  beforeAll:
    - assert: "1 == 2"
  afterAll:
    - http: {method: POST, url: "/data?op=afterAll-2"}
cases:
  - title: never runs
    steps:
      - http: {method: POST, url: "/data?op=case"}
`)
	run = startRunIn(t, db, res.Task, "alice", "")
	final = waitFinal(t, db, run.ID)
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	if final.Status == duet.StatusPassed || len(execs) != 1 || execs[0].ErrorCode != duet.CodeHookFailed || !strings.Contains(execs[0].ErrorMessage, "beforeAll") {
		t.Errorf("beforeAll failed: run %s, %s", final.Status, describeTree(execs[0]))
	}
	if got := rec.ops(); !slices.Equal(got, []string{"afterEach", "afterAll", "afterAll-2"}) {
		t.Errorf("calls: got %v", got)
	}
}
