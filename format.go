package duet

import (
	"fmt"
	"strings"
)

// FormatMs renders a duration in milliseconds for people: "85 ms" under a
// second, seconds with decimals digits ("1.24 s" for 2) under a minute,
// then whole minutes and seconds ("2 min 5 s").
func FormatMs(ms int64, decimals int) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60_000:
		return fmt.Sprintf("%.*f s", decimals, float64(ms)/1000)
	}
	return fmt.Sprintf("%d min %d s", ms/60_000, ms%60_000/1000)
}

// Slug turns s into a name part of at most most bytes: its lower-case ASCII
// letters and digits, each run of other characters between them one dash,
// no dash at either end ("" when s has no ASCII letter or digit). Case keys
// made from titles and artifact file names use it.
func Slug(s string, most int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if b.Len() >= most {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}
