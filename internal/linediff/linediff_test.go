package linediff_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/linediff"
)

// render writes a diff as unified-diff lines ("-a", "+b", " c").
func render(d []linediff.Line) string {
	var b strings.Builder
	for _, l := range d {
		b.WriteString(string(l.Op) + l.Text + "\n")
	}
	return b.String()
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct{ name, a, b, want string }{
		{"equal", "a\nb\n", "a\nb\n", " a\n b\n"},
		{"both empty", "", "", ""},
		{"from nothing", "", "a\nb", "+a\n+b\n"},
		{"to nothing", "a\nb\n", "", "-a\n-b\n"},
		{"a line changed", "key: x\ntitle: old\nsteps: []\n", "key: x\ntitle: new\nsteps: []\n", " key: x\n-title: old\n+title: new\n steps: []\n"},
		{"a line added in the middle", "a\nb\nc\n", "a\nb\nx\nc\n", " a\n b\n+x\n c\n"},
		{"lines moved keep the longest common part", "a\nb\nc\nd\n", "b\nc\nd\na\n", "-a\n b\n c\n d\n+a\n"},
		{"repeated lines", "x\na\nx\nb\nx\n", "x\nb\nx\na\nx\n", " x\n-a\n-x\n b\n+x\n+a\n x\n"},
		{"the final newline ends a line", "a\n", "a", " a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(linediff.Diff(tc.a, tc.b)); got != tc.want {
				t.Errorf("Diff(%q, %q):\n%s\nwant:\n%s", tc.a, tc.b, got, tc.want)
			}
		})
	}
}

// TestLineNumbers: each kept or removed line carries its number in the old
// text, each kept or added one its number in the new one.
func TestLineNumbers(t *testing.T) {
	d := linediff.Diff("a\nb\nc\nd\n", "a\nx\nc\nd\ne\n")
	want := []linediff.Line{
		{Op: linediff.Kept, Text: "a", Old: 1, New: 1},
		{Op: linediff.Removed, Text: "b", Old: 2},
		{Op: linediff.Added, Text: "x", New: 2},
		{Op: linediff.Kept, Text: "c", Old: 3, New: 3},
		{Op: linediff.Kept, Text: "d", Old: 4, New: 4},
		{Op: linediff.Added, Text: "e", New: 5},
	}
	if len(d) != len(want) {
		t.Fatalf("got %+v", d)
	}
	for i := range want {
		if d[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, d[i], want[i])
		}
	}
	if a, r := linediff.Count(d); a != 2 || r != 1 {
		t.Errorf("Count: %d added, %d removed", a, r)
	}
}

// TestDiffRebuildsBothTexts: for random texts, the kept and removed lines
// are the old text and the kept and added lines the new one, and the kept
// lines are as many as a longest common subsequence (computed here the
// plain recursive way) has.
func TestDiffRebuildsBothTexts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() []string {
		var l []string
		for range r.IntN(9) {
			l = append(l, string(rune('a'+r.IntN(3))))
		}
		return l
	}
	for range 2000 {
		x, y := text(), text()
		d := linediff.Diff(strings.Join(x, "\n"), strings.Join(y, "\n"))
		var old, nw []string
		kept := 0
		for _, l := range d {
			if l.Op != linediff.Added {
				old = append(old, l.Text)
			}
			if l.Op != linediff.Removed {
				nw = append(nw, l.Text)
			}
			if l.Op == linediff.Kept {
				kept++
			}
		}
		if strings.Join(old, "\n") != strings.Join(x, "\n") || strings.Join(nw, "\n") != strings.Join(y, "\n") {
			t.Fatalf("%q → %q: the diff %+v does not give back both texts", x, y, d)
		}
		if want := lcs(x, y); kept != want {
			t.Fatalf("%q → %q: %d lines kept, the longest common subsequence has %d", x, y, kept, want)
		}
	}
}

func lcs(x, y []string) int {
	if len(x) == 0 || len(y) == 0 {
		return 0
	}
	if x[0] == y[0] {
		return 1 + lcs(x[1:], y[1:])
	}
	return max(lcs(x[1:], y), lcs(x, y[1:]))
}

// TestPastTheBound: texts whose differing middles are too large to
// compare are given as the old middle removed and the new one added,
// their common start and end kept.
func TestPastTheBound(t *testing.T) {
	var a, b strings.Builder
	a.WriteString("same\n")
	b.WriteString("same\n")
	for i := range 2100 {
		a.WriteString("a" + string(rune('0'+i%10)) + "\n")
		b.WriteString("b" + string(rune('0'+i%10)) + "\n")
	}
	a.WriteString("end\n")
	b.WriteString("end\n")
	d := linediff.Diff(a.String(), b.String())
	if added, removed := linediff.Count(d); added != 2100 || removed != 2100 || d[0].Op != linediff.Kept || d[len(d)-1].Op != linediff.Kept {
		t.Fatalf("%d added, %d removed; first %+v, last %+v", added, removed, d[0], d[len(d)-1])
	}
}
