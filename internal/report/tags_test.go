package report_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/artifact"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/report"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestCaseTags: each case of the report carries its tags, its own and its
// task's — in the JSON, as labels on the HTML's case rows, and as duet.tag
// properties of its JUnit testcase; a case without tags has none.
func TestCaseTags(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(ctx, []byte(`
task: {name: shop, baseURL: "https://shop.example", tags: [shop]}
cases:
  - {key: a, title: Checkout, tags: [smoke, "@cart"], steps: [{assert: "true"}]}
  - {key: b, title: Search, steps: [{assert: "true"}]}
`), "s.yaml", compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	applied, err := db.ApplySuite(ctx, "alice", s)
	if err != nil {
		t.Fatal(err)
	}
	cases, _, _, _ := db.FindCases(ctx, duet.CaseFilter{TaskID: applied.Task.ID})
	run := &duet.Run{TaskID: applied.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceCLI}
	var xs []*duet.Execution
	for _, c := range cases {
		xs = append(xs, &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps})
	}
	if _, _, err := db.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: xs}); err != nil {
		t.Fatal(err)
	}
	arts := artifact.New(filepath.Join(t.TempDir(), "artifacts"), time.Hour)
	r, err := report.Build(ctx, db, arts, "alice", run.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"@cart", "shop", "smoke"}, "b": {"shop"}}
	var js struct {
		Cases []struct {
			Key  string
			Tags []string
		}
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	for _, c := range js.Cases {
		got := slices.Sorted(slices.Values(c.Tags))
		if !slices.Equal(got, want[c.Key]) {
			t.Errorf("JSON: case %s has tags %q, want %q", c.Key, got, want[c.Key])
		}
	}
	buf.Reset()
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"smoke", "@cart", "shop"} {
		if !strings.Contains(buf.String(), `<span class="tag">`+tag+`</span>`) {
			t.Errorf("HTML: no label of the tag %s", tag)
		}
	}
	buf.Reset()
	if err := r.WriteJUnit(&buf); err != nil {
		t.Fatal(err)
	}
	x := buf.String()
	checkout := x[strings.Index(x, `<testcase name="Checkout"`):]
	checkout = checkout[:strings.Index(checkout, "</testcase>")]
	for _, tag := range []string{"smoke", "@cart", "shop"} {
		if !strings.Contains(checkout, `<property name="duet.tag" value="`+tag+`"></property>`) {
			t.Errorf("JUnit: the Checkout testcase lacks the tag %s:\n%s", tag, checkout)
		}
	}
}
