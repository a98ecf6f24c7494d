// Package linediff compares two texts line by line: the lines kept, removed
// and added, as a longest common subsequence of their lines gives them.
// Texts are a case's YAML (small); past MaxCells the middle of two texts
// that differ is given as removed then added, not compared.
package linediff

import "strings"

// Op says what happened to one line.
type Op string

// What happened to a line.
const (
	Kept    Op = " "
	Removed Op = "-"
	Added   Op = "+"
)

// Line is one line of a diff: its text, and its number (1 the first) in
// the old text (Old, 0 for an added line) and the new one (New, 0 for a
// removed line).
type Line struct {
	Op   Op     `json:"op"`
	Text string `json:"text"`
	Old  int    `json:"old,omitempty"`
	New  int    `json:"new,omitempty"`
}

// MaxCells bounds the table the comparison fills (lines of the old text's
// differing middle times those of the new one's).
const MaxCells = 4 << 20

// Split returns the lines of s: "" has none; a final newline ends the last
// line rather than starting another.
func Split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// Diff returns the lines of the texts a (old) and b (new): each line of a
// kept or removed and each line of b kept or added, in order, with as
// many lines kept as a longest common subsequence has.
func Diff(a, b string) []Line {
	x, y := Split(a), Split(b)
	out := make([]Line, 0, max(len(x), len(y)))
	// The common start and end need no table.
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	for i := range pre {
		out = append(out, Line{Op: Kept, Text: x[i], Old: i + 1, New: i + 1})
	}
	out = middle(out, x[pre:len(x)-suf], y[pre:len(y)-suf], pre, pre)
	for k := range suf {
		i, j := len(x)-suf+k, len(y)-suf+k
		out = append(out, Line{Op: Kept, Text: x[i], Old: i + 1, New: j + 1})
	}
	return out
}

// middle appends the diff of x and y, which start at lines ox+1 and oy+1
// of their texts.
func middle(out []Line, x, y []string, ox, oy int) []Line {
	n, m := len(x), len(y)
	if n == 0 || m == 0 || n*m > MaxCells {
		for i, s := range x {
			out = append(out, Line{Op: Removed, Text: s, Old: ox + i + 1})
		}
		for j, s := range y {
			out = append(out, Line{Op: Added, Text: s, New: oy + j + 1})
		}
		return out
	}
	// lcs[i*(m+1)+j] is the length of a longest common subsequence of
	// x[i:] and y[j:].
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case x[i] == y[j]:
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
				lcs[i*w+j] = lcs[(i+1)*w+j]
			default:
				lcs[i*w+j] = lcs[i*w+j+1]
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			out = append(out, Line{Op: Kept, Text: x[i], Old: ox + i + 1, New: oy + j + 1})
			i, j = i+1, j+1
		case j == m || (i < n && lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			out = append(out, Line{Op: Removed, Text: x[i], Old: ox + i + 1})
			i++
		default:
			out = append(out, Line{Op: Added, Text: y[j], New: oy + j + 1})
			j++
		}
	}
	return out
}

// Count returns how many lines of d were added and removed.
func Count(d []Line) (added, removed int) {
	for _, l := range d {
		switch l.Op {
		case Added:
			added++
		case Removed:
			removed++
		}
	}
	return added, removed
}
