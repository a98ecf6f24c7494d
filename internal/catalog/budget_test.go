package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
)

// TestBudgetBuffer: a result written piece by piece stops at the call's
// result budget — the write that would pass it fails with TOO_LARGE and
// keeps nothing of itself — and outside Govern nothing is capped.
func TestBudgetBuffer(t *testing.T) {
	t.Parallel()
	c, _, _, _ := setup(t, catalog.Options{Limits: catalog.Limits{MaxResultBytes: 1024}})
	err := c.Govern(t.Context(), catalog.Op{Caller: duet.Caller{UserID: "alice", Source: duet.SourceCLI}, Method: "getReport"}, func(ctx context.Context) (int, error) {
		b := catalog.NewBudgetBuffer(ctx)
		if _, err := b.WriteString(strings.Repeat("a", 1000)); err != nil {
			t.Fatalf("within the budget: %v", err)
		}
		_, err := b.Write([]byte(strings.Repeat("b", 25)))
		if duet.ErrorCode(err) != duet.CodeTooLarge || len(b.Bytes()) != 1000 {
			t.Fatalf("past the budget: %v, %d bytes kept; want TOO_LARGE and 1000", err, len(b.Bytes()))
		}
		return len(b.Bytes()), err
	})
	if duet.ErrorCode(err) != duet.CodeTooLarge {
		t.Fatalf("Govern: %v, want TOO_LARGE", err)
	}
	b := catalog.NewBudgetBuffer(t.Context())
	if _, err := b.WriteString(strings.Repeat("a", 1<<20)); err != nil {
		t.Fatalf("outside Govern: %v", err)
	}
}
