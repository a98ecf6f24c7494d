package catalog

import (
	"context"

	"github.com/duet-test/duet"
)

// BudgetBuffer collects a result that is written out piece by piece (a
// rendered report) and holds at most the result budget of the call it was
// made for: the write that would pass it fails with TOO_LARGE, so the
// writer stops there instead of building the whole result only for Govern
// to refuse it afterwards.
type BudgetBuffer struct {
	buf []byte
	max int // 0: no budget (outside Govern)
}

// NewBudgetBuffer returns a buffer holding at most ResultBudget(ctx) bytes
// (any amount outside Govern).
func NewBudgetBuffer(ctx context.Context) *BudgetBuffer { return &BudgetBuffer{max: ResultBudget(ctx)} }

// Write appends p, or fails with TOO_LARGE if that would pass the budget.
func (b *BudgetBuffer) Write(p []byte) (int, error) {
	if err := b.room(len(p)); err != nil {
		return 0, err
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// WriteString is Write for a string.
func (b *BudgetBuffer) WriteString(s string) (int, error) {
	if err := b.room(len(s)); err != nil {
		return 0, err
	}
	b.buf = append(b.buf, s...)
	return len(s), nil
}

func (b *BudgetBuffer) room(n int) error {
	if b.max > 0 && len(b.buf)+n > b.max {
		return duet.Errorf(duet.CodeTooLarge, "the result reached the limit of %d bytes while it was being written and was stopped there (ask for less: a smaller page, another format)", b.max)
	}
	return nil
}

// Bytes returns what was written.
func (b *BudgetBuffer) Bytes() []byte { return b.buf }
