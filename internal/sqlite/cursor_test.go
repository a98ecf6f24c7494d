package sqlite

import (
	"testing"

	"github.com/duet-test/duet"
)

// FuzzCursor: a page cursor comes from the client; any string decodes to a
// key or to INVALID_ARGUMENT, and a cursor Duet made decodes to its key.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{"", "k:task_06h", encodeCursor("run_06h2xy"), "!!", "a2", "azp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := decodeCursor(s); err != nil && duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Fatalf("decodeCursor(%q): got %v, want INVALID_ARGUMENT", s, err)
		}
		if k, err := decodeCursor(encodeCursor(s)); err != nil || k != s {
			t.Fatalf("decodeCursor(encodeCursor(%q)) = %q, %v", s, k, err)
		}
	})
}
