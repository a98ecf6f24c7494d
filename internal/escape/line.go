package escape

import (
	"strings"
	"unicode"
)

// Line makes outside text safe for a one-line message (an error, a log
// line): control characters become spaces, runs of space collapse, and it
// is cut to n runes (with an ellipsis).
func Line(s string, n int) string {
	var b strings.Builder
	space := false
	count := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
			count++
		}
		if count >= n {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		count++
	}
	return b.String()
}
