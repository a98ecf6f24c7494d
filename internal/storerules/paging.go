package storerules

import (
	"encoding/base64"
	"errors"
	"strings"

	"github.com/duet-test/duet"
)

// RootCause strips wrapping so messages stay one short line.
func RootCause(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// Cursors are opaque to callers: base64 of the last key seen.
func EncodeCursor(key string) string {
	if key == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte("k:" + key))
}

// Page cuts items, read with one more than limit, to the page of limit
// and the cursor of the next page ("" when this one is the last): the key
// of the page's last item.
func Page[T any](items []T, limit int, key func(T) string) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, EncodeCursor(key(items[limit-1]))
}

func DecodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), "k:") {
		return "", duet.Errorf(duet.CodeInvalidArgument, "invalid cursor")
	}
	return string(b[2:]), nil
}

func ClampLimit(n, def, max int) int {
	if n <= 0 {
		return def
	}
	if n > max {
		return max
	}
	return n
}

// LikeEscape escapes s for use in a LIKE pattern with ESCAPE '\'.
func LikeEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}
