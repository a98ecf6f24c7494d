package escape_test

import (
	"testing"

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
