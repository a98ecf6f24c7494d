package escape_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/duet-test/duet/internal/escape"
)

func TestText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"mcp:read orders.write", "mcp:read orders.write"},
		{`C:\path "quoted"`, `C:\path "quoted"`},
		{"Grüße, 注文", "Grüße, 注文"},
		{"\x1b[2J\x1b[Hauthorized", `\x1b[2J\x1b[Hauthorized`},
		{"two\nlines\r\tand a tab", `two\nlines\r\tand a tab`},
		{"\x07bell \x7f del \u009b csi", `\abell \x7f del \u009b csi`},
		{"\x1b]0;title\x07", `\x1b]0;title\a`},
		{"user\u202etxt.exe", `user\u202etxt.exe`},
		{"zero\u200bwidth\ufeff", `zero\u200bwidth\ufeff`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"", ""},
	}
	for _, tt := range tests {
		if got := escape.Text(tt.in); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred", "\u202e", "\xff", "a\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := escape.Text(s)
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' || r == '\u2028' {
				t.Fatalf("Text(%q) = %q keeps %U", s, out, r)
			}
		}
	})
}

// write passes chunks through a Writer and returns what came out.
func write(t *testing.T, chunks ...string) string {
	t.Helper()
	var b strings.Builder
	w := escape.NewWriter(&b)
	for _, c := range chunks {
		if n, err := w.Write([]byte(c)); err != nil || n != len(c) {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"KIND\tNAME\nskill\tcheckout\n"}, "KIND\tNAME\nskill\tcheckout\n"},
		{[]string{"Grüße, 注文\n"}, "Grüße, 注文\n"},
		{[]string{"\x1b]0;title\x07 \x1b]52;c;cHduZWQ=\x07 \x1b[2J"}, `\x1b]0;title\a \x1b]52;c;cHduZWQ=\a \x1b[2J`},
		{[]string{"user\u202etxt.exe\r"}, `user\u202etxt.exe\r`},
		{[]string{"\x7f del \u009b csi \U000e0001 tag"}, `\u007f del \u009b csi \udb40\udc01 tag`},
		// A character split between two writes.
		{[]string{"注"[:1], "注"[1:2], "注"[2:] + "\u202e"[:2], "\u202e"[2:]}, `注\u202e`},
		// An invalid byte, and a sequence the stream never finishes.
		{[]string{"bad \xff ", "end \xe6\xb3"}, `bad \xff end \xe6\xb3`},
	}
	for _, tt := range tests {
		if got := write(t, tt.in...); got != tt.want {
			t.Errorf("Writer(%q) wrote %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzWriter: whatever goes in, nothing but the newline and the tab comes
// out below U+0020, nor DEL, C1, format or separator characters; and JSON
// written by encoding/json comes out valid, reading the same.
func FuzzWriter(f *testing.F) {
	for _, s := range []string{"plain", "\x1b[31mred\n", "\u202e", "\xff", "a\tb\r\n", "\U000e0001\x7f\u0085"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, cut int) {
		if cut < 0 || cut > len(s) {
			cut = len(s) / 2
		}
		out := write(t, s[:cut], s[cut:])
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("Writer(%q) wrote %q, which keeps %U", s, out, r)
			}
		}
		js, _ := json.Marshal(s)
		var back, want string
		if err := json.Unmarshal([]byte(write(t, string(js[:len(js)/2]), string(js[len(js)/2:]))), &back); err != nil {
			t.Fatalf("JSON %s through the Writer: %v", js, err)
		}
		json.Unmarshal(js, &want)
		if back != want {
			t.Fatalf("JSON %s through the Writer reads %q, want %q", js, back, want)
		}
	})
}
