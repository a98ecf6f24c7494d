package duet

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxUserIDBytes is the longest user id, in bytes.
const MaxUserIDBytes = 128

// ValidUserID checks that s can be a user id: 1 to MaxUserIDBytes bytes of
// valid UTF-8, every character printable and none a space (no control or
// invisible formatting characters, no newline, no NUL), not starting with
// "team:" (TeamPrefix: that names a team wherever a user can be named, so a
// user called "team:qa" would be read as team qa) and not "*" (Everyone). It
// is the one rule for user ids wherever they come from — the gateway's
// SSO-Emp-Id header, MCP-Lite's user.empId, DUET_USER, --as, token owners,
// share lists, team members, the stores — and the catalog applies it again
// to every call. The error (INVALID_ARGUMENT) never quotes the value.
func ValidUserID(s string) error {
	switch {
	case s == "":
		return Errorf(CodeInvalidArgument, "the user id is empty")
	case strings.HasPrefix(s, TeamPrefix):
		return Errorf(CodeInvalidArgument, "a user id cannot start with %q: that names a team", TeamPrefix)
	case s == Everyone:
		return Errorf(CodeInvalidArgument, "a user id cannot be %q: that means everyone", Everyone)
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

// ValidPrincipal checks what a task or an asset may be shared with, or
// handed to: a user id (ValidUserID) or "team:NAME" with a valid team name.
// Whether the team exists is the store's check, in the transaction that
// records the share. Returns INVALID_ARGUMENT.
func ValidPrincipal(p string) error {
	if team, ok := TeamOf(p); ok {
		if !ValidTeamName(team) {
			return Errorf(CodeInvalidArgument, "the name after %q is not a team name: lower-case letters, digits, '.', '_' or '-', at most 64, starting with a letter or digit", TeamPrefix)
		}
		return nil
	}
	return ValidUserID(p)
}
