package closedport_test

import (
	"net/http"
	"testing"

	"github.com/duet-test/duet/internal/closedport"
)

// TestNothingAnswers: a request to the address fails at once, and the
// port stays held (the same answer twice).
func TestNothingAnswers(t *testing.T) {
	u := closedport.URL(t)
	for range 2 {
		resp, err := http.Get(u + "/")
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s: %s, want an error", u, resp.Status)
		}
	}
}
