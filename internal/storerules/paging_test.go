package storerules

import (
	"strconv"
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

func TestPage(t *testing.T) {
	key := func(n int) string { return strconv.Itoa(n) }
	if items, next := Page([]int{1, 2}, 2, key); len(items) != 2 || next != "" {
		t.Errorf("a last page: %v %q", items, next)
	}
	items, next := Page([]int{1, 2, 3}, 2, key)
	if len(items) != 2 || next == "" {
		t.Fatalf("a page with more after it: %v %q", items, next)
	}
	if k, err := DecodeCursor(next); err != nil || k != "2" {
		t.Errorf("the next page starts after %q (%v), want 2", k, err)
	}
}
