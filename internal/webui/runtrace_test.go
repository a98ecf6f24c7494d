package webui_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/catalog"
)

// TestRunPageOffersNoVideoWithoutReplay: the run page links the trace a
// failed case kept, but offers no video of it when the trace holds no
// replay (a first attempt under on-failure; here a case without a page);
// TestTraceViewerInABrowser shows the link when it does.
func TestRunPageOffersNoVideoWithoutReplay(t *testing.T) {
	t.Parallel()
	e := apptest.Serve(t, nil)
	alice := signIn(t, e, "alice")
	suite := "task:\n  name: no-replay\n  baseURL: http://127.0.0.1:9\ncases:\n  - {key: c, title: a failing case, steps: [{assert: 'false'}]}\n"
	_, _, resp := alice.post("/tasks/apply", url.Values{"source": {suite}})
	taskID := strings.TrimPrefix(strings.Split(resp.Header.Get("Location"), "?")[0], "/tasks/")
	st, body, _ := e.Call("alice", "POST", api.Prefix+"/runs", api.RunIn{TaskID: taskID}, "Idempotency-Key", "no-replay")
	var start catalog.StartRunOut
	if err := json.Unmarshal(body, &start); err != nil || start.RunID == "" {
		t.Fatalf("start: %d %s", st, body)
	}
	var got catalog.GetRunOut
	for deadline := time.Now().Add(time.Minute); !got.Run.Done && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, body, _ = e.Call("alice", "GET", api.Prefix+"/runs/"+start.RunID, nil)
		json.Unmarshal(body, &got)
	}
	if got.Run.Status != duet.StatusFailed || len(got.Executions) != 1 {
		t.Fatalf("the run: %s", body)
	}
	_, page, _ := alice.get("/runs/" + start.RunID)
	if !strings.Contains(page, `class="trace-link"`) || strings.Contains(page, `class="video-link"`) {
		t.Fatalf("the run page of a trace without a replay: trace link %v, video link %v",
			strings.Contains(page, `class="trace-link"`), strings.Contains(page, `class="video-link"`))
	}
}
