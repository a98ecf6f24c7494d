package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/rhysd/actionlint"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
)

// docBlock returns the fenced block that follows <!-- name --> in
// docs/ci.md.
func docBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + regexp.QuoteMeta(name) + " -->\n```[a-z]*\n(.*?)\n```").FindSubmatch(b)
	if m == nil {
		t.Fatalf("docs/ci.md has no block %s", name)
	}
	return string(m[1])
}

// TestCIScriptAgainstServer runs the commands docs/ci.md gives pipelines,
// with bash, curl and jq, against a Duet server (duet serve on a loopback
// port) with a personal token as the CI secret: a passing task exits 0 and
// leaves the JUnit, JSON and HTML reports and a job summary; a failing one
// exits 1 with the failed case in the summary; an unknown task exits 2, an
// unreachable server 3.
func TestCIScriptAgainstServer(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the pipeline scripts need %s: %v", tool, err)
		}
	}
	e := apptest.Serve(t, nil)
	apply := func(name, assert string) string {
		src := "task:\n  name: " + name + "\n  baseURL: http://127.0.0.1:9\ncases:\n  - key: sums\n    title: sums add up\n    steps:\n      - set: {x: '1 + 1'}\n      - assert: " + assert + "\n"
		status, body, _ := e.Call("alice", "POST", "/api/v1/tasks", api.ApplyIn{Source: src})
		if status != 201 && status != 200 {
			t.Fatalf("apply %s: %d %s", name, status, body)
		}
		var res duet.ApplyResult
		decodeInto(t, body, &res)
		return res.Task.ID
	}
	good, bad := apply("ci-good", "x == 2"), apply("ci-bad", "x == 3")
	dir := t.TempDir()
	script, summary := filepath.Join(dir, "duet-ci.sh"), filepath.Join(dir, "duet-summary.sh")
	os.WriteFile(script, []byte(docBlock(t, "duet-ci.sh")), 0o755)
	os.WriteFile(summary, []byte(docBlock(t, "duet-summary.sh")), 0o755)
	run := func(file, url, taskID, key string) (int, string, string) {
		work := filepath.Join(dir, key)
		os.MkdirAll(work, 0o755)
		cmd := exec.CommandContext(t.Context(), "bash", file)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DUET_URL=" + url, "DUET_TOKEN=" + e.Tokens["alice"], "DUET_TASK_ID=" + taskID,
			"DUET_RUN_KEY=" + key, "DUET_POLL_SECONDS=0.2", "GITHUB_STEP_SUMMARY=" + filepath.Join(work, "summary.md"),
			// A pull request's job on GitHub Actions.
			"GITHUB_ACTIONS=true", "GITHUB_SERVER_URL=https://github.example", "GITHUB_REPOSITORY=acme/shop", "GITHUB_RUN_ID=4242",
			"GITHUB_REF=refs/pull/7/merge", "GITHUB_HEAD_REF=feature/" + key, "GITHUB_SHA=0123abcd" + key}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), work
	}

	code, out, work := run(script, e.URL, good, "good")
	if code != 0 || !strings.Contains(out, "ci-good: passed, 1 of 1 passed") {
		t.Fatalf("a passing task: exit %d\n%s", code, out)
	}
	for _, f := range []string{"duet-junit.xml", "duet-report.json", "duet-report.html"} {
		if st, err := os.Stat(filepath.Join(work, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if junit, _ := os.ReadFile(filepath.Join(work, "duet-junit.xml")); !strings.Contains(string(junit), "<testsuite") {
		t.Fatalf("junit: %s", junit)
	}
	// The run carries its origin, and is found by its branch.
	var list api.RunList
	_, body, _ := e.Call("alice", "GET", "/api/v1/runs?branch=feature/good", nil)
	decodeInto(t, body, &list)
	if len(list.Runs) != 1 || list.Runs[0].Origin == nil || *list.Runs[0].Origin != (duet.RunOrigin{Commit: "0123abcdgood", Branch: "feature/good",
		PullRequest: "https://github.example/acme/shop/pull/7", Pipeline: "https://github.example/acme/shop/actions/runs/4242"}) {
		t.Fatalf("the run's origin: %s", body)
	}
	if _, body, _ := e.Call("alice", "GET", "/api/v1/runs?branch=feature/other", nil); strings.Contains(string(body), "run_") {
		t.Fatalf("another branch's runs: %s", body)
	}
	// The same key follows the same run (a retried job step).
	if code, out2, _ := run(script, e.URL, good, "good"); code != 0 || firstLine(out2) != firstLine(out) {
		t.Fatalf("the retried step started another run: %s / %s", out, out2)
	}
	if code, out, _ := run(summary, e.URL, good, "good"); code != 0 {
		t.Fatalf("summary: %d %s", code, out)
	}
	md, _ := os.ReadFile(filepath.Join(work, "summary.md"))
	if !strings.Contains(string(md), "## Duet: ci-good: PASSED") || !strings.Contains(string(md), "1 passed, 0 failed") || !strings.Contains(string(md), e.URL+"/runs/run_") {
		t.Fatalf("the job summary: %s", md)
	}

	code, out, work = run(script, e.URL, bad, "bad")
	if code != 1 || !strings.Contains(out, "ci-bad: failed") {
		t.Fatalf("a failing task: exit %d\n%s", code, out)
	}
	run(summary, e.URL, bad, "bad")
	md, _ = os.ReadFile(filepath.Join(work, "summary.md"))
	if !strings.Contains(string(md), "- **sums add up**: failed `ASSERTION_FAILED`") {
		t.Fatalf("the failing job summary: %s", md)
	}

	if code, out, _ := run(script, e.URL, "task_nope", "nope"); code != 2 || !strings.Contains(out, "NOT_FOUND") {
		t.Fatalf("an unknown task: exit %d\n%s", code, out)
	}
	if code, out, _ := run(script, "http://127.0.0.1:1", good, "down"); code != 3 {
		t.Fatalf("an unreachable server: exit %d\n%s", code, out)
	}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func decodeInto(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// TestScheduleFiresEndToEnd: a schedule made over REST with a one-minute
// cron fires on a running server (duet serve: its scheduler and workers),
// and its run, alice's, passes. It waits for the event, up to two slots.
func TestScheduleFiresEndToEnd(t *testing.T) {
	t.Parallel()
	e := apptest.Serve(t, nil)
	status, body, _ := e.Call("alice", "POST", "/api/v1/tasks", api.ApplyIn{Source: apptest.Suite("every-minute")})
	if status >= 300 {
		t.Fatalf("apply: %d %s", status, body)
	}
	var res duet.ApplyResult
	decodeInto(t, body, &res)
	status, body, _ = e.Call("alice", "POST", "/api/v1/schedules", api.ScheduleIn{TaskID: res.Task.ID, Cron: "* * * * *"})
	if status != 201 {
		t.Fatalf("createSchedule: %d %s", status, body)
	}
	var sc api.ScheduleView
	decodeInto(t, body, &sc)
	deadline := time.Now().Add(150 * time.Second)
	for {
		runs, _, err := e.App.Store.FindRuns(t.Context(), duet.RunFilter{Viewer: "alice", TaskID: res.Task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) > 0 && runs[0].Status.Final() {
			r := runs[0]
			if r.Status != duet.StatusPassed || r.TriggeredBy != "alice" || r.CallSource != duet.SourceSchedule {
				t.Fatalf("the scheduled run: %+v", r)
			}
			got, _ := e.App.Store.FindScheduleByID(t.Context(), "alice", sc.ID)
			if got.LastRunID != r.ID || !got.NextFireAt.After(*got.LastFireAt) {
				t.Fatalf("the schedule after its slot: %+v", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled run finished within two slots: %+v", runs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestCIPipelineFiles: the GitHub Actions workflow of docs/ci.md passes
// actionlint (the workflow's schema, its expressions and action inputs),
// and a broken one does not; the GitLab file is YAML with the job's
// script and JUnit report.
func TestCIPipelineFiles(t *testing.T) {
	t.Parallel()
	lint := func(src string) []*actionlint.Error {
		l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{WorkingDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		errs, err := l.Lint(".github/workflows/duet.yml", []byte(src), nil)
		if err != nil {
			t.Fatal(err)
		}
		return errs
	}
	wf := docBlock(t, "github-actions")
	for _, e := range lint(wf) {
		t.Errorf("the GitHub workflow: %s", e.Error())
	}
	if !strings.Contains(wf, "bash ci/duet-ci.sh") || !strings.Contains(wf, "bash ci/duet-summary.sh") || !strings.Contains(wf, "secrets.DUET_TOKEN") {
		t.Errorf("the workflow does not run the documented scripts with the token secret:\n%s", wf)
	}
	if errs := lint(strings.Replace(wf, "runs-on:", "run-on:", 1)); len(errs) == 0 {
		t.Errorf("a workflow without runs-on passed the check")
	}
	var gl map[string]struct {
		Script    []string `yaml:"script"`
		Artifacts struct {
			Reports struct {
				JUnit string `yaml:"junit"`
			} `yaml:"reports"`
		} `yaml:"artifacts"`
	}
	if err := yaml.Unmarshal([]byte(docBlock(t, "gitlab-ci")), &gl); err != nil {
		t.Fatal(err)
	}
	if j := gl["duet"]; len(j.Script) != 1 || j.Script[0] != "bash ci/duet-ci.sh" || j.Artifacts.Reports.JUnit != "duet-junit.xml" {
		t.Errorf("the GitLab job: %+v", gl)
	}
	if jf := docBlock(t, "jenkins"); !strings.Contains(jf, "sh 'bash ci/duet-ci.sh'") || !strings.Contains(jf, "junit allowEmptyResults: true, testResults: 'duet-junit.xml'") {
		t.Errorf("the Jenkinsfile: %s", jf)
	}
}
