package engine_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// TestFailedAssertionShowsOperands: a failed assert says what its operands
// were (issue 18: "expected o.body.status == "shipped"" alone sent the
// user to the raw output), redacted like saved variables.
func TestFailedAssertionShowsOperands(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	srv := api(t)
	tests := []struct {
		assert string
		want   string // the message after "expected ..."
	}{
		{`order.body.status == "shipped"`, `; order.body.status is "paid"`},
		{`order.status == 200 && len(order.body.id) > 5`, `; len(order.body.id) is 2`},
		{`order.body.id == "B2" || order.body.total > 100`, `; order.body.id is "A1", order.body.total is 12.5`},
		{`not (order.body.status in ["paid", "shipped"])`, `; order.body.status is "paid"`},
		{`order.body.access_token == "x"`, `; order.body.access_token is "[redacted]"`},
		{`order.headers["set-cookie"] == "x"`, `is "[redacted]"`},
		{`order.body == {"id": "A1"}`, `"access_token":"[redacted]"`},
		{`order.body.id == order.body.status`, `; order.body.id is "A1", order.body.status is "paid"`},
	}
	var yaml strings.Builder
	yaml.WriteString("task: {name: api, baseURL: " + srv.URL + "}\ncases:\n")
	for i, tt := range tests {
		yaml.WriteString("  - key: c" + string(rune('a'+i)) + "\n    title: t\n    steps:\n      - http: {url: /orders/A1, saveAs: order}\n      - assert: '" + tt.assert + "'\n")
	}
	res := apply(t, db, "alice", yaml.String())
	w, _, _ := worker(t, db, engine.Options{}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	waitFinal(t, db, run.ID)
	execs, err := db.FindExecutions(t.Context(), run.ID)
	if err != nil || len(execs) != len(tests) {
		t.Fatalf("executions: %d, %v", len(execs), err)
	}
	for i, tt := range tests {
		r := execs[i].Results[1]
		if r.ErrorCode != duet.CodeAssertionFailed || !strings.HasPrefix(r.ErrorMessage, "expected "+tt.assert) || !strings.Contains(r.ErrorMessage, tt.want) {
			t.Errorf("assert %s: got %s %q, want ASSERTION_FAILED with %q", tt.assert, r.ErrorCode, r.ErrorMessage, tt.want)
		}
		if strings.Contains(r.ErrorMessage, "tok-123") || strings.Contains(r.ErrorMessage, "sekrit") {
			t.Errorf("assert %s: the message shows a secret: %q", tt.assert, r.ErrorMessage)
		}
	}
}
