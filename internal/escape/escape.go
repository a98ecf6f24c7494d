// Package escape makes text that comes from another party (an MCP server, an
// authorization server) safe to print on a terminal: a server's name, a tool
// description, an OAuth client id or granted scope could otherwise carry
// escape sequences that clear the screen, rewrite earlier lines, set the
// window title or reorder what a person reads.
package escape

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s with every character that is not plainly printable written
// as a Go escape: control characters (C0, DEL, C1: \x1b, \n, \t, \u009b, ...),
// Unicode format characters such as the bidirectional overrides (\u202e)
// and zero-width characters, separators other than the space, and invalid
// UTF-8 bytes (\xff). Everything else, backslashes included, is left as it
// is, so ordinary text reads the same. The result is one line: print text
// of several lines one line at a time.
func Text(s string) string {
	if printable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case plain(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

func plain(r rune) bool {
	return r == ' ' || unicode.IsPrint(r) && !unicode.Is(unicode.Cf, r)
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
