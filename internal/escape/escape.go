// Package escape makes text that comes from another party (an MCP server, an
// authorization server) safe to print on a terminal: a server's name, a tool
// description, an OAuth client id or granted scope could otherwise carry
// escape sequences that clear the screen, rewrite earlier lines, set the
// window title or reorder what a person reads.
package escape

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
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

// Writer is an io.Writer for a terminal stream: it passes on what is written
// to it, except that every character [Text] would escape — other than the
// newline and the tab, which lay out what a program prints — is written as an
// escape. Text printed through it can therefore end lines, but never clear the
// screen, set the window title or the clipboard, move the cursor or reorder
// what a person reads, whoever wrote it.
//
// Its escapes keep JSON valid and unchanged in meaning: encoding/json writes
// control characters below U+0020 escaped already, and the characters it
// leaves as they are (DEL, C1 controls, format characters such as U+202E,
// characters beyond U+FFFF) come out as \uXXXX escapes (surrogate pairs
// beyond U+FFFF), which a JSON string reads as the same characters. A UTF-8
// sequence split between two writes is held until its end arrives; call
// Flush when done. It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte // the start of a UTF-8 sequence, at most utf8.UTFMax-1 bytes
	buf  []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p to the underlying writer, escaped. It returns len(p) when
// every byte was written or held (see Flush), else the underlying error.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if len(w.held) > 0 {
		p = append(w.held, p...)
		w.held = nil
	}
	i := 0
	for i < len(p) && (p[i] >= 0x20 && p[i] < 0x7f || p[i] == '\n' || p[i] == '\t') {
		i++
	}
	if i == len(p) { // the common case: plain ASCII
		if _, err := w.w.Write(p); err != nil {
			return 0, err
		}
		return n, nil
	}
	b := append(w.buf[:0], p[:i]...)
	for i < len(p) {
		c := p[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			b = append(b, c)
			i++
			continue
		}
		if c >= utf8.RuneSelf && !utf8.FullRune(p[i:]) && len(p)-i < utf8.UTFMax {
			// The rest of the sequence comes with the next write.
			w.held = append(w.held[:0], p[i:]...)
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\x`...)
			b = append(b, strconv.FormatUint(uint64(c)|0x100, 16)[1:]...)
		case c >= utf8.RuneSelf && plain(r):
			b = append(b, p[i:i+size]...)
		case r == 0x7f || r > 0x7f && r <= 0xffff:
			b = appendU(b, r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b = appendU(appendU(b, r1), r2)
		default: // a C0 control: \x1b, \a, \r
			q := strconv.QuoteRuneToASCII(r)
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	w.buf = b
	if _, err := w.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

func appendU(b []byte, r rune) []byte {
	b = append(b, `\u`...)
	return append(b, strconv.FormatUint(uint64(r)|0x10000, 16)[1:]...)
}

// Flush writes the bytes of an unfinished UTF-8 sequence still held, escaped
// as invalid bytes.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.held) == 0 {
		return nil
	}
	var b []byte
	for _, c := range w.held {
		b = append(b, `\x`...)
		b = append(b, strconv.FormatUint(uint64(c)|0x100, 16)[1:]...)
	}
	w.held = nil
	_, err := w.w.Write(b)
	return err
}
