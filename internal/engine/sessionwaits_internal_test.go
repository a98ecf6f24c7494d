package engine

import (
	"slices"
	"testing"

	"github.com/duet-test/duet"
)

// A case that starts from a saved session waits for the earlier cases that
// save it, and only for them, when cases run in parallel.
func TestSessionWaits(t *testing.T) {
	saves := func(name string) duet.Step {
		return duet.Step{Kind: "saveSession", Browser: &duet.BrowserStep{Session: name}}
	}
	uses := func(name string) duet.Step {
		return duet.Step{Kind: "session", Browser: &duet.BrowserStep{Session: name}}
	}
	todo := []*duet.Execution{
		{Steps: []duet.Step{saves("admin")}},              // 0
		{Steps: []duet.Step{uses("admin")}},               // 1
		{Steps: []duet.Step{{Kind: "open"}}},              // 2
		{Steps: []duet.Step{saves("shopper")}},            // 3
		{Steps: []duet.Step{uses("shopper"), saves("x")}}, // 4
		{Steps: []duet.Step{uses("admin"), uses("x")}},    // 5
		{Steps: []duet.Step{uses("nobody")}},              // 6
	}
	got := sessionWaits(todo)
	want := [][]int{nil, {0}, nil, nil, {3}, {0, 4}, nil}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("case %d waits for %v, want %v", i, got[i], want[i])
		}
	}
}

// The cases run in their stored order, which need not be the file's: a
// case that saves a session goes before the cases that start from it.
func TestSessionOrder(t *testing.T) {
	saves := func(name string) duet.Step {
		return duet.Step{Kind: "saveSession", Browser: &duet.BrowserStep{Session: name}}
	}
	uses := func(name string) duet.Step {
		return duet.Step{Kind: "session", Browser: &duet.BrowserStep{Session: name}}
	}
	a := &duet.Execution{CaseTitle: "uses shopper", Steps: []duet.Step{uses("shopper")}}
	b := &duet.Execution{CaseTitle: "plain", Steps: []duet.Step{{Kind: "open"}}}
	c := &duet.Execution{CaseTitle: "uses x, saves shopper", Steps: []duet.Step{uses("x"), saves("shopper")}}
	d := &duet.Execution{CaseTitle: "saves x", Steps: []duet.Step{saves("x")}}
	e := &duet.Execution{CaseTitle: "saves and uses y", Steps: []duet.Step{saves("y"), uses("y")}}
	var got []string
	for _, x := range sessionOrder([]*duet.Execution{a, b, c, d, e}) {
		got = append(got, x.CaseTitle)
	}
	want := []string{"plain", "saves x", "uses x, saves shopper", "uses shopper", "saves and uses y"}
	if !slices.Equal(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
	if w := sessionWaits(sessionOrder([]*duet.Execution{a, b, c, d, e})); !slices.Equal(w[3], []int{2}) || !slices.Equal(w[2], []int{1}) {
		t.Errorf("waits %v", w)
	}
}
