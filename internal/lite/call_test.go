package lite_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/lite"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestCallHoldsOneSlot: the slot the door takes for a call (Admit) is the
// one the call runs in (catalog.Request.Slot): with one call per caller,
// a call succeeds — it would be refused RATE_LIMITED if the catalog took a
// second — and gives its slot back, so the next one succeeds too; a call
// while another of the caller's is in flight is refused at the door.
func TestCallHoldsOneSlot(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat := catalog.New(db, catalog.Options{Limits: catalog.Limits{MaxPerCaller: 1}})
	h := lite.New(cat, lite.Options{Codes: httpapi.Codes})
	call := h.Call(func(*http.Request) auth.Identity { return auth.Identity{UserID: "alice", Method: auth.MethodToken} })
	post := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "/mcp/tools/call", strings.NewReader(`{"name":"list_test_tasks","arguments":{}}`))
		r = r.WithContext(duet.NewContextWithCaller(r.Context(), duet.Caller{UserID: "alice"}))
		w := httptest.NewRecorder()
		call(w, r)
		return w
	}
	for i := range 2 {
		if w := post(); w.Code != http.StatusOK || strings.Contains(w.Body.String(), "RATE_LIMITED") {
			t.Fatalf("call %d with one slot per caller: %d %s", i+1, w.Code, w.Body)
		}
	}
	held, err := cat.Admit(catalog.Op{Caller: duet.Caller{UserID: "alice"}, Method: "tools/call", Name: "elsewhere"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if w := post(); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "RATE_LIMITED") {
		t.Errorf("a call while another is in flight: %d %s, want 429 RATE_LIMITED", w.Code, w.Body)
	}
}
