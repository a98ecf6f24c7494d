package schedule_test

import (
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/schedule"
)

// TestPolicies checks both policies alike: empty is the default, each
// value is kept, anything else is refused with the policy's name and its
// two values.
func TestPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		missed, overlap string
		wantM           duet.MissedPolicy
		wantO           duet.OverlapPolicy
		wantErr         string
	}{
		{"", "", duet.MissedSkip, duet.OverlapSkip, ""},
		{"runOnce", "queue", duet.MissedRunOnce, duet.OverlapQueue, ""},
		{"skip", "skip", duet.MissedSkip, duet.OverlapSkip, ""},
		{"queue", "", "", "", `missed must be skip or runOnce, got "queue"`},
		{"", "runOnce", "", "", `overlap must be skip or queue, got "runOnce"`},
		{"Skip", "", "", "", `missed must be skip or runOnce, got "Skip"`},
	} {
		m, o, err := schedule.Policies(tc.missed, tc.overlap)
		if tc.wantErr != "" {
			if duet.ErrorCode(err) != duet.CodeInvalidArgument || duet.ErrorMessage(err) != tc.wantErr {
				t.Errorf("Policies(%q, %q): got error %v, want INVALID_ARGUMENT %q", tc.missed, tc.overlap, err, tc.wantErr)
			}
			continue
		}
		if err != nil || m != tc.wantM || o != tc.wantO {
			t.Errorf("Policies(%q, %q) = %q, %q, %v; want %q, %q", tc.missed, tc.overlap, m, o, err, tc.wantM, tc.wantO)
		}
	}
}
