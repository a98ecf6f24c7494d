package catalog_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// TestQueuedRunsCap: start_test_run refuses a user's run beyond
// Limits.MaxQueuedRuns with RATE_LIMITED and a message that says why; other
// users and replays are not affected.
func TestQueuedRunsCap(t *testing.T) {
	t.Parallel()
	c, _, task, _ := setup(t, catalog.Options{Limits: catalog.Limits{MaxQueuedRuns: 2}})
	start := func(user, key string) *catalog.Result {
		return call(t, c, user, catalog.ToolStartRun, map[string]any{"taskId": task.ID, "idempotencyKey": key})
	}
	for i := range 2 {
		decode[catalog.StartRunOut](t, start("alice", fmt.Sprint(i)))
	}
	over := start("alice", "2")
	if !over.IsError || over.Code != duet.CodeRateLimited || !strings.Contains(over.Text, "2 runs queued") {
		t.Fatalf("third queued run: got %s %q, want RATE_LIMITED saying 2 runs are queued", over.Code, over.Text)
	}
	if again := decode[catalog.StartRunOut](t, start("alice", "0")); !again.Replayed {
		t.Fatalf("replay at the cap: got %+v", again)
	}
	decode[catalog.StartRunOut](t, start("bob", "0"))
}
