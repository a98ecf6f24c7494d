package storerules

import (
	"testing"

	"github.com/duet-test/duet"
)

// FuzzCursor: a page cursor comes from the client; any string decodes to a
// key or to INVALID_ARGUMENT, and a cursor Duet made decodes to its key.
func FuzzCursor(f *testing.F) {
	for _, s := range []string{"", "k:task_06h", EncodeCursor("run_06h2xy"), "!!", "a2", "azp"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := DecodeCursor(s); err != nil && duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Fatalf("DecodeCursor(%q): got %v, want INVALID_ARGUMENT", s, err)
		}
		if k, err := DecodeCursor(EncodeCursor(s)); err != nil || k != s {
			t.Fatalf("DecodeCursor(EncodeCursor(%q)) = %q, %v", s, k, err)
		}
	})
}
