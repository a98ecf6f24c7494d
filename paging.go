package duet

import (
	"context"
	"iter"
)

// Paged yields every item of a list read page by page: page(cursor) returns
// the page at cursor ("" for the first) and the cursor of the next one (""
// after the last). A failed read is yielded once, with a zero item, and ends
// the list; so does a page with no items, whatever cursor came with it (a
// store that answered so would otherwise be asked the same page forever).
// Stopping early reads no further page.
func Paged[T any](page func(cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for cursor := ""; ; {
			items, next, err := page(cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" || len(items) == 0 {
				return
			}
			cursor = next
		}
	}
}

// AllCases yields every case that f selects, read from find (a CaseStore's
// FindCases) 200 at a time; f's Cursor and Limit are set by it.
func AllCases(ctx context.Context, find func(context.Context, CaseFilter) ([]*Case, string, int, error), f CaseFilter) iter.Seq2[*Case, error] {
	return Paged(func(cursor string) ([]*Case, string, error) {
		f.Cursor, f.Limit = cursor, 200
		cases, next, _, err := find(ctx, f)
		return cases, next, err
	})
}
