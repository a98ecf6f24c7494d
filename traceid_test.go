package duet_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestNewTraceIDIsTimeOrdered: a trace id is a valid W3C trace id whose
// first 48 bits are the millisecond it was made, so that the ids of later
// calls sort after those of earlier ones (the audit trail's trace index
// grows at its end), and whose last 80 bits are random.
func TestNewTraceIDIsTimeOrdered(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[0-9a-f]{32}$`)
	before := duet.NewTraceID()
	time.Sleep(2 * time.Millisecond)
	seen := map[string]bool{}
	for range 1000 {
		id := duet.NewTraceID()
		if !valid.MatchString(id) || id == "00000000000000000000000000000000" {
			t.Fatalf("got %q, want 32 lower-case hex digits, not all zero", id)
		}
		if id <= before {
			t.Fatalf("got %s after %s, want a later trace id to sort after an earlier one", id, before)
		}
		if seen[id[12:]] {
			t.Fatalf("the random part %s came twice", id[12:])
		}
		seen[id[12:]] = true
	}
	start := time.Now().UnixMilli()
	ms, err := strconv.ParseInt(duet.NewTraceID()[:12], 16, 64)
	if end := time.Now().UnixMilli(); err != nil || ms < start || ms > end {
		t.Errorf("got the time %d (%v) in front of the trace id, want the millisecond it was made (%d..%d)", ms, err, start, end)
	}
}
