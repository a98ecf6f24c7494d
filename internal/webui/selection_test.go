package webui_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/app/apptest"
)

// TestStartRunByTags: the task page's start form selects the cases by tags
// and title text.
func TestStartRunByTags(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	alice := signIn(t, e, "alice")
	src := "task:\n  name: tagged\n  baseURL: http://127.0.0.1:9\ncases:\n  - {title: Sign in, tags: [smoke], steps: [{assert: 'true'}]}\n  - {title: Add to cart, tags: [smoke, cart], steps: [{assert: 'true'}]}\n  - {title: Refund, steps: [{assert: 'true'}]}\n"
	status, body, resp := alice.post("/tasks/apply", url.Values{"source": {src}})
	if status != http.StatusSeeOther {
		t.Fatalf("apply: %d %s", status, body)
	}
	taskPath := strings.Split(resp.Header.Get("Location"), "?")[0]
	if _, page, _ := alice.get(taskPath); !strings.Contains(page, `<input id="tags" name="tags"`) {
		t.Errorf("the task page has no tags field")
	}
	status, _, resp = alice.post(taskPath+"/runs", url.Values{"idempotencyKey": {"k1"}, "tags": {" smoke , "}, "grep": {"cart"}})
	if status != http.StatusSeeOther {
		t.Fatalf("start a run: %d", status)
	}
	runID := strings.TrimPrefix(resp.Header.Get("Location"), "/runs/")
	execs, err := e.App.Store.FindExecutions(t.Context(), runID)
	if err != nil || len(execs) != 1 || execs[0].CaseTitle != "Add to cart" {
		t.Fatalf("the run's cases: %v %+v", err, execs)
	}
	// The run page shows each case's tags on its row.
	_, page, _ := alice.get("/runs/" + runID)
	row := page[strings.Index(page, `data-exec="`+execs[0].ID+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	for _, tag := range []string{"smoke", "cart"} {
		if !strings.Contains(row, `<span class="tag">`+tag+`</span>`) {
			t.Errorf("the run page's case row lacks the tag %s: %s", tag, row)
		}
	}
}
