package catalog_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestStartRunSelection: start_test_run runs the cases its tags, excluded
// tags and grep select, with the run's retries in place of the cases'
// (within the deployment's bound); a selection of nothing, a bad value and
// the same key with another selection are refused.
func TestStartRunSelection(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(t.Context(), []byte(`
task: {name: shop, baseURL: "http://127.0.0.1:1", tags: [shop], retries: 1}
cases:
  - {key: login, title: Sign in, tags: [smoke], steps: [{assert: "true"}]}
  - {key: cart, title: Add to cart, tags: [smoke, slow], retries: 2, steps: [{assert: "true"}]}
  - {key: refund, title: Refund an order, steps: [{assert: "true"}]}
`), "", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.ApplySuite(t.Context(), "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New(db, catalog.Options{Limits: catalog.Limits{MaxRetries: 3}})
	start := func(key string, args map[string]any) *catalog.Result {
		args["taskId"], args["idempotencyKey"] = res.Task.ID, key
		return call(t, c, "alice", catalog.ToolStartRun, args)
	}
	cases := func(out catalog.StartRunOut) map[string]int {
		execs, err := db.FindExecutions(t.Context(), out.RunID)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, x := range execs {
			m[x.CaseKey] = x.Retries
		}
		return m
	}
	got := cases(decode[catalog.StartRunOut](t, start("smoke", map[string]any{"tags": []string{"smoke"}, "excludeTags": []string{"slow"}})))
	if len(got) != 1 || got["login"] != 1 {
		t.Fatalf("tags smoke, not slow: %v", got)
	}
	got = cases(decode[catalog.StartRunOut](t, start("grep", map[string]any{"grep": "CART"})))
	if len(got) != 1 || got["cart"] != 2 {
		t.Fatalf("grep cart: %v", got)
	}
	got = cases(decode[catalog.StartRunOut](t, start("retries", map[string]any{"retries": 0, "tags": []string{"shop"}})))
	if len(got) != 3 || got["cart"] != 0 || got["login"] != 0 {
		t.Fatalf("the run's retries 0 win over the cases': %v", got)
	}
	for _, tt := range []struct {
		key  string
		args map[string]any
		want string
	}{
		{"none", map[string]any{"tags": []string{"nightly"}}, "its cases have tags shop, slow, smoke"},
		{"too many retries", map[string]any{"retries": 4}, "DUET_MAX_RETRIES=3"},
		{"negative retries", map[string]any{"retries": -1}, "retries must be from 0 to 3"},
		{"smoke", map[string]any{"tags": []string{"slow"}}, "IDEMPOTENCY"},
	} {
		r := start(tt.key, tt.args)
		if !r.IsError || !strings.Contains(r.Text, tt.want) {
			t.Errorf("%s: got %s, want an error with %q", tt.key, r.Text, tt.want)
		}
	}
	// The same key and the same selection, in another order: replayed.
	again := decode[catalog.StartRunOut](t, start("smoke", map[string]any{"excludeTags": []string{"slow"}, "tags": []string{"smoke", "smoke"}}))
	if !again.Replayed {
		t.Fatal("the same selection was not replayed")
	}
}
