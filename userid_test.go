package duet_test

import (
	"strings"
	"testing"

	"github.com/duet-test/duet"
)

func TestValidUserID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"alice", "E12345", "a.b-c_d@example.com", "ünïcode", "用户", strings.Repeat("x", 128)} {
		if err := duet.ValidUserID(ok); err != nil {
			t.Errorf("%q: got %v, want valid", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a\nb", "a\x00b", "a\tb", "\u200balice", "alice\u202e", "a\xffb", strings.Repeat("x", 129), strings.Repeat("é", 65)} {
		err := duet.ValidUserID(bad)
		if duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("%q: got %v, want INVALID_ARGUMENT", bad, err)
			continue
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("%q: the error quotes the value: %v", bad, err)
		}
	}
}
