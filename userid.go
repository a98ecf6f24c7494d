package duet

import (
	"unicode"
	"unicode/utf8"
)

// MaxUserIDBytes is the longest user id, in bytes.
const MaxUserIDBytes = 128

// ValidUserID checks that s can be a user id: 1 to MaxUserIDBytes bytes of
// valid UTF-8, every character printable and none a space (no control or
// invisible formatting characters, no newline, no NUL). It is the one rule
// for user ids wherever they come from — the gateway's SSO-Emp-Id header,
// MCP-Lite's user.empId, DUET_USER, --as, token owners — and the catalog
// applies it again to every call. The error (INVALID_ARGUMENT) never quotes
// the value.
func ValidUserID(s string) error {
	switch {
	case s == "":
		return Errorf(CodeInvalidArgument, "the user id is empty")
	case len(s) > MaxUserIDBytes:
		return Errorf(CodeInvalidArgument, "the user id is %d bytes; the limit is %d", len(s), MaxUserIDBytes)
	case !utf8.ValidString(s):
		return Errorf(CodeInvalidArgument, "the user id is not valid UTF-8")
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return Errorf(CodeInvalidArgument, "the user id contains a space, control or invisible character (U+%04X)", r)
		}
	}
	return nil
}
