package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/catalog"
)

// runList is the part of a listRuns answer the tests read.
type runList struct {
	Runs       []api.RunSummary `json:"runs"`
	Total      int              `json:"total"`
	NextCursor string           `json:"nextCursor"`
}

// TestRESTConventions: a known path with a method it does not serve is
// 405 with the methods it does in Allow (an unknown path stays 404); a run
// started is 201 Created with its Location; a DELETE is 204 No Content;
// listRuns counts its runs like listTasks; a limit out of its bounds and a
// missing Idempotency-Key are refused in plain words.
func TestRESTConventions(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)

	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/api/v1/tasks", "GET, HEAD, POST"},
		{"DELETE", "/api/v1/runs", "GET, HEAD, POST"},
		{"PATCH", "/api/v1/runs/run_x", "GET, HEAD"},
		{"GET", "/api/v1/runs/run_x/cancel", "POST"},
		{"POST", "/api/v1/tokens/tok_x", "DELETE"},
		{"DELETE", "/api/v1/openapi.json", "GET, HEAD"},
		{"PUT", "/api/v1/assets/skill/alice/x", "DELETE, GET, HEAD"},
	} {
		for _, user := range []string{"alice", ""} {
			status, b, resp := e.Call(user, c.method, c.path, nil)
			if status != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow || apptest.ErrCode(b) != "METHOD_NOT_ALLOWED" ||
				!strings.Contains(string(b), c.allow) {
				t.Errorf("%s %s as %q: %d Allow %q %s, want 405 METHOD_NOT_ALLOWED, Allow %q", c.method, c.path, user, status, resp.Header.Get("Allow"), b, c.allow)
			}
		}
	}
	for _, p := range []string{"/api/v1/nothing", "/api/v1/tasks/t/nothing", "/api/v1/runs/a/b/c"} {
		if status, b, _ := e.Call("alice", "PUT", p, nil); status != http.StatusNotFound || apptest.ErrCode(b) != duet.CodeNotFound {
			t.Errorf("PUT %s: %d %s, want 404 NOT_FOUND", p, status, b)
		}
	}

	// A run: 201 with its Location, which serves it.
	status, b, _ := e.Call("alice", "POST", api.Prefix+"/tasks", api.ApplyIn{Source: apptest.Suite("plain")})
	if status != http.StatusCreated {
		t.Fatalf("apply: %d %s", status, b)
	}
	taskID := decode[duet.ApplyResult](t, b).Task.ID
	var first string
	for i := range 3 {
		status, b, resp := e.Call("alice", "POST", api.Prefix+"/runs", api.RunIn{TaskID: taskID}, "Idempotency-Key", "k"+string(rune('0'+i)))
		loc := resp.Header.Get("Location")
		out := decode[catalog.StartRunOut](t, b)
		if status != http.StatusCreated || loc != api.Prefix+"/runs/"+out.RunID {
			t.Fatalf("start: %d Location %q %s, want 201 with Location %s/runs/%s", status, loc, b, api.Prefix, out.RunID)
		}
		if st, got, _ := e.Call("alice", "GET", loc, nil); st != http.StatusOK || !strings.Contains(string(got), out.RunID) {
			t.Fatalf("GET %s: %d %s", loc, st, got)
		}
		if i == 0 {
			first = out.RunID
		}
	}
	// listRuns has a total, as listTasks does, over every page.
	status, b, _ = e.Call("alice", "GET", api.Prefix+"/runs?limit=1", nil)
	if list := decode[runList](t, b); status != http.StatusOK || list.Total != 3 || len(list.Runs) != 1 || list.NextCursor == "" {
		t.Fatalf("listRuns?limit=1: %d %s, want 1 of a total of 3", status, b)
	}
	if _, b, _ = e.Call("bob", "GET", api.Prefix+"/runs", nil); decode[runList](t, b).Total != 0 {
		t.Fatalf("bob's runs: %s", b)
	}
	if _, b, _ = e.Call("alice", "GET", api.Prefix+"/runs?status=cancelled", nil); decode[runList](t, b).Total != 0 {
		t.Fatalf("alice's cancelled runs: %s", b)
	}
	if status, b, _ = e.Call("alice", "POST", api.Prefix+"/runs/"+first+"/cancel", nil); status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, b)
	}
	if _, b, _ = e.Call("alice", "GET", api.Prefix+"/runs?status=cancelled", nil); decode[runList](t, b).Total != 1 {
		t.Fatalf("alice's cancelled runs: %s", b)
	}

	// The Idempotency-Key header, missing: said in words.
	status, b, _ = e.Call("alice", "POST", api.Prefix+"/runs", api.RunIn{TaskID: taskID})
	if msg := string(b); status != http.StatusBadRequest || !strings.Contains(msg, "the Idempotency-Key header is missing") || strings.Contains(msg, "/properties") {
		t.Errorf("no Idempotency-Key: %d %s", status, b)
	}
	if status, b, _ = e.Call("alice", "POST", api.Prefix+"/runs", api.RunIn{TaskID: taskID}, "Idempotency-Key", strings.Repeat("k", 201)); status != http.StatusBadRequest ||
		!strings.Contains(string(b), "Idempotency-Key must be at most 200 characters") {
		t.Errorf("a 201-character Idempotency-Key: %d %s", status, b)
	}

	// Limits out of their bounds: a plain message, the same for each.
	for path, want := range map[string]string{
		"/tasks?limit=0":                        "limit must be 1–100",
		"/tasks?limit=1000":                     "limit must be 1–100",
		"/runs?limit=0":                         "limit must be 1–100",
		"/runs?limit=101":                       "limit must be 1–100",
		"/runs?limit=x":                         "limit must be 1–100",
		"/tasks/" + taskID + "/cases?limit=201": "limit must be 1–200",
		"/runs/" + first + "?limit=1001":        "limit must be 1–1000",
		"/audit?limit=1001":                     "limit must be 1–1000",
		"/invocations?limit=0":                  "limit must be 1–1000",
		"/tasks/" + taskID + "/trends?runs=101": "runs must be 1–100",
		"/assets/skill/alice/x?version=0":       "version must be a whole number from 1",
	} {
		status, b, _ := e.Call("alice", "GET", api.Prefix+path, nil)
		if status != http.StatusBadRequest || apptest.ErrCode(b) != duet.CodeInvalidArgument || !strings.Contains(string(b), want) || strings.Contains(string(b), "/properties") {
			t.Errorf("GET %s: %d %s, want 400 %q", path, status, b, want)
		}
	}
	for _, path := range []string{"/tasks?limit=1", "/tasks?limit=100", "/runs?limit=100", "/audit?limit=1000", "/tasks?limit="} {
		if status, b, _ := e.Call("alice", "GET", api.Prefix+path, nil); status != http.StatusOK {
			t.Errorf("GET %s: %d %s, want 200", path, status, b)
		}
	}

	// DELETE: 204, no body.
	if status, b, _ = e.Call("alice", "POST", api.Prefix+"/teams", api.TeamIn{Name: "qa"}); status != http.StatusCreated {
		t.Fatalf("create a team: %d %s", status, b)
	}
	status, b, resp := e.Call("alice", "DELETE", api.Prefix+"/teams/qa", nil)
	if status != http.StatusNoContent || len(b) != 0 || resp.Header.Get("Content-Type") != "" {
		t.Fatalf("DELETE a team: %d %q %q, want 204 without a body", status, b, resp.Header.Get("Content-Type"))
	}
}
