package engine_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/engine"
)

// recorder is a JSON API that records the calls it gets, in order: POST
// /data?op=NAME answers {op, n} (n counting the calls so far); GET /items
// answers a list of items; GET /hold waits until its request ends, after
// telling held.
type recorder struct {
	mu    sync.Mutex
	calls []string
	held  chan struct{}
	srv   *httptest.Server
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{held: make(chan struct{}, 10)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /data", func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.calls = append(r.calls, req.URL.Query().Get("op"))
		n := len(r.calls)
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"op": req.URL.Query().Get("op"), "n": n, "token": "tok-" + req.URL.Query().Get("op")})
	})
	mux.HandleFunc("GET /items", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"items":[{"sku":"a","qty":1},{"sku":"b","qty":2},{"sku":"c","qty":3}]}`)
	})
	mux.HandleFunc("GET /hold", func(w http.ResponseWriter, req *http.Request) {
		r.held <- struct{}{}
		<-req.Context().Done()
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) ops() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// TestFlowSteps: if, repeat, forEach and use run the steps they hold, each
// result kept under the flow step with its iteration; variables saved
// inside are seen after; a loop past its bound fails with LOOP_LIMIT.
func TestFlowSteps(t *testing.T) {
	t.Parallel()
	db := openStore(t)
	rec := newRecorder(t)
	res := apply(t, db, "alice", `
task: {name: flows, baseURL: `+rec.srv.URL+`}
flows:
  record:
    params: {op: null, tag: x}
    steps:
      - http: {method: POST, url: "/data?op=${op}-${tag}", saveAs: recorded}
cases:
  - title: flow steps
    steps:
      - http: {url: /items, saveAs: resp}
      - forEach:
          in: resp.body.items
          as: item
          index: i
          steps:
            - if:
                expr: item.qty >= 2
                then:
                  - use: {flow: record, with: {op: "big-${item.sku}"}}
                else:
                  - set: {small: item.sku}
      - assert: small == "a" && recorded.body.op == "big-c-x" && i == 3
      - repeat:
          until: recorded.body.n >= 3
          steps:
            - use: {flow: record, with: {op: again, tag: "${item.sku}"}}
      - repeat: {times: 2, steps: [{set: {twice: "1"}}]}
  - title: loop bound
    steps:
      - repeat:
          while: "true"
          max: 3
          steps:
            - set: {spin: "1"}
`)
	w, _, _ := worker(t, db, engine.Options{}, engine.WorkerOptions{})
	run := startRun(t, db, res.Task, "alice")
	w.Notify()
	final := waitFinal(t, db, run.ID)
	execs, _ := db.FindExecutions(t.Context(), run.ID)
	x := execs[0]
	if x.Status != duet.StatusPassed {
		t.Fatalf("flow steps: got %s", describeTree(x))
	}
	if got := rec.ops(); !slices.Equal(got, []string{"big-b-x", "big-c-x", "again-c"}) {
		t.Errorf("calls: got %v", got)
	}
	each := x.Results[1]
	if each.Kind != duet.StepForEach || each.Iterations != 3 || len(each.Children) != 3 {
		t.Fatalf("forEach: got %+v", each)
	}
	for i, c := range each.Children {
		want := map[bool]string{true: "then", false: "else"}[i > 0]
		if c.Kind != duet.StepIf || c.Iteration != i+1 || c.Branch != want || len(c.Children) != 1 || c.Status != duet.StatusPassed {
			t.Errorf("iteration %d: got %+v", i+1, c)
		}
	}
	use := each.Children[2].Children[0]
	if use.Kind != duet.StepUse || len(use.Children) != 1 || use.Children[0].Kind != duet.StepHTTP || use.Children[0].SavedAs != "recorded" {
		t.Errorf("use: got %+v / %+v", use, use.Children)
	}
	if r := x.Results[3]; r.Iterations != 1 || r.Name != "repeat until recorded.body.n >= 3" {
		t.Errorf("repeat until: got %+v", r)
	}
	if r := x.Results[4]; r.Iterations != 2 || len(r.Children) != 2 || r.Children[1].Iteration != 2 {
		t.Errorf("repeat times: got %+v", r)
	}

	y := execs[1]
	r := y.Results[0]
	if y.Status != duet.StatusFailed || y.ErrorCode != duet.CodeLoopLimit || r.ErrorCode != duet.CodeLoopLimit || r.Iterations != 3 || len(r.Children) != 3 ||
		!strings.Contains(r.ErrorMessage, "true still holds after 3 iterations (max 3)") {
		t.Errorf("loop bound: got %s / %+v", describeTree(y), r)
	}
	if final.Status != duet.StatusFailed || final.ErrorCode != duet.CodeLoopLimit {
		t.Errorf("run: got %s %s", final.Status, final.ErrorCode)
	}
}

// describeTree prints an execution's step results, nested ones indented.
func describeTree(x *duet.Execution) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s", x.Status, x.ErrorCode, x.ErrorMessage)
	var walk func(rs []*duet.StepResult, depth int)
	walk = func(rs []*duet.StepResult, depth int) {
		for _, r := range rs {
			fmt.Fprintf(&b, "\n%s%d[%d] %-10s %-9s %s %s %s", strings.Repeat("  ", depth+1), r.Index, r.Iteration, r.Kind, r.Status, r.Hook, r.ErrorCode, r.ErrorMessage)
			walk(r.Children, depth+1)
		}
	}
	walk(x.Results, 0)
	return b.String()
}
