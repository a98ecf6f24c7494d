package mcpclient

import "testing"

// TestSpanIDsDiffer: span ids made in the same millisecond differ (a span
// id is the random half of a trace id, never its time).
func TestSpanIDsDiffer(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := spanID()
		if len(id) != 16 || id == "0000000000000000" {
			t.Fatalf("got span id %q, want 16 hex digits, not all zero", id)
		}
		if seen[id] {
			t.Fatalf("span id %s came twice", id)
		}
		seen[id] = true
	}
}
