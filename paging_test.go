package duet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// pagedCases is a FindCases over n cases, pageSize at a time, that fails
// at the page failAt (if ≥ 0) and records the cursors it was asked for.
type pagedCases struct {
	n, pageSize, failAt int
	asked               []string
	filters             []CaseFilter
}

func (p *pagedCases) find(_ context.Context, f CaseFilter) ([]*Case, string, int, error) {
	p.asked = append(p.asked, f.Cursor)
	p.filters = append(p.filters, f)
	start := 0
	if f.Cursor != "" {
		fmt.Sscan(f.Cursor, &start)
	}
	if len(p.asked)-1 == p.failAt {
		return nil, "", 0, errors.New("database away")
	}
	var out []*Case
	for i := start; i < min(start+p.pageSize, p.n); i++ {
		out = append(out, &Case{Key: fmt.Sprint(i)})
	}
	next := ""
	if start+p.pageSize < p.n {
		next = fmt.Sprint(start + p.pageSize)
	}
	return out, next, p.n, nil
}

func keys(t *testing.T, seq func(func(*Case, error) bool)) ([]string, error) {
	t.Helper()
	var out []string
	for c, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, c.Key)
	}
	return out, nil
}

func TestAllCasesReadsEveryPage(t *testing.T) {
	p := &pagedCases{n: 5, pageSize: 2, failAt: -1}
	got, err := keys(t, AllCases(t.Context(), p.find, CaseFilter{TaskID: "t1", IncludeDrafts: true, Cursor: "stale", Limit: 7}))
	if err != nil || !slices.Equal(got, []string{"0", "1", "2", "3", "4"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if !slices.Equal(p.asked, []string{"", "2", "4"}) {
		t.Fatalf("cursors asked: %q", p.asked)
	}
	for _, f := range p.filters {
		if f.TaskID != "t1" || !f.IncludeDrafts || f.Limit != 200 {
			t.Fatalf("filter passed on: %+v", f)
		}
	}
}

func TestAllCasesStopsAtAnError(t *testing.T) {
	p := &pagedCases{n: 5, pageSize: 2, failAt: 1}
	got, err := keys(t, AllCases(t.Context(), p.find, CaseFilter{}))
	if err == nil || !slices.Equal(got, []string{"0", "1"}) {
		t.Fatalf("got %v, %v; want the first page, then the error", got, err)
	}
	if len(p.asked) != 2 {
		t.Fatalf("pages asked after the error: %q", p.asked)
	}
}

func TestPagedStopsEarly(t *testing.T) {
	p := &pagedCases{n: 10, pageSize: 2, failAt: -1}
	for c, err := range AllCases(t.Context(), p.find, CaseFilter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Key == "2" {
			break
		}
	}
	if !slices.Equal(p.asked, []string{"", "2"}) {
		t.Fatalf("cursors asked: %q; a loop that stopped at the second page read on", p.asked)
	}
}

func TestPagedEndsAtAnEmptyPage(t *testing.T) {
	calls := 0
	for _, err := range Paged(func(string) ([]int, string, error) {
		calls++
		if calls > 3 {
			t.Fatal("an empty page with a cursor was asked for again")
		}
		return nil, "again", nil
	}) {
		t.Fatalf("an item or error from an empty page: %v", err)
	}
}
