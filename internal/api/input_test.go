package api_test

import (
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/app/apptest"
)

// TestRESTInputStrict: the query string is read once, strictly, as the
// OpenAPI document declares it — an unknown or repeated parameter, a
// malformed query, a boolean other than true/false are refused, not
// ignored or read one way here and another way by a proxy — and every
// input refused before its operation ran (query or body) leaves one audit
// record.
func TestRESTInputStrict(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	for _, path := range []string{
		"/api/v1/tasks?limt=5",                     // a typo is not ignored
		"/api/v1/tasks?limit=1&limit=1000",         // which one?
		"/api/v1/tasks?limit=%zz",                  // malformed
		"/api/v1/tasks/t1/cases?includeDrafts=1",   // a boolean is true or false
		"/api/v1/runs?status=queued&status=failed", // repeated
		"/api/v1/audit?user=alice;limit=5",         // a semicolon is no separator
	} {
		if status, b, _ := e.Call("alice", "GET", path, nil); status != 400 || apptest.ErrCode(b) != duet.CodeInvalidArgument {
			t.Errorf("GET %s: %d %s, want 400 INVALID_ARGUMENT", path, status, b)
		}
	}
	if status, b, _ := e.Call("alice", "GET", "/api/v1/tasks?limit=5&query=x", nil); status != 200 {
		t.Fatalf("declared parameters: %d %s", status, b)
	}
	if status, b, _ := e.CallRaw("alice", "POST", "/api/v1/tokens", `{"name":"a","name":"b"}`); status != 400 {
		t.Fatalf("a body with a duplicate key: %d %s", status, b)
	}
	e.App.Audit.Flush()
	recs, err := e.App.Store.FindAudit(t.Context(), duet.AuditFilter{Caller: "alice", Outcome: duet.CodeInvalidArgument})
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]int{}
	for _, r := range recs {
		methods[r.Method]++
	}
	if methods["listTasks"] != 3 || methods["listCases"] != 1 || methods["listRuns"] != 1 || methods["listAudit"] != 1 || methods["createToken"] != 1 {
		t.Fatalf("each refused input audited once, by operation: %v", methods)
	}
}

// TestRESTAnswersNotCached: an answer of the API — a new token's value
// among them — is never kept by a cache, and never read as another type.
func TestRESTAnswersNotCached(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/api/v1/tokens", map[string]string{"name": "ci"}},
		{"GET", "/api/v1/tokens", nil},
		{"GET", "/api/v1/audit", nil},
		{"GET", "/api/v1/tasks/nope", nil},
	} {
		status, b, resp := e.Call("alice", c.method, c.path, c.body)
		if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d, Cache-Control %q, X-Content-Type-Options %q (%.100s)", c.method, c.path, status,
				resp.Header.Get("Cache-Control"), resp.Header.Get("X-Content-Type-Options"), b)
		}
	}
}
