package duet

import (
	"testing"
	"time"
)

func TestPostRunWhen(t *testing.T) {
	t.Parallel()
	statuses := []RunStatus{StatusPassed, StatusFailed, StatusError, StatusCancelled, StatusRunning}
	want := map[PostRunWhen][]bool{
		PostRunOnSuccess: {true, false, false, false, false},
		PostRunOnFailure: {false, true, true, false, false},
		PostRunAlways:    {true, true, true, true, false},
		"sometimes":      {false, false, false, false, false},
	}
	for when, ws := range want {
		for i, s := range statuses {
			if got := when.Matches(s); got != ws[i] {
				t.Errorf("%s.Matches(%s): got %v, want %v", when, s, got, ws[i])
			}
		}
	}
}

func TestPostRunHash(t *testing.T) {
	t.Parallel()
	a := []*PostRunAction{{Name: "ticket", On: PostRunOnFailure, ServerKey: "mcp_x_12345678", ToolName: "file", Line: 3,
		InputBindings: map[string]Binding{"title": {Source: BindValue, Value: "${run.id}"}}}}
	moved := []*PostRunAction{{Name: "ticket", On: PostRunOnFailure, ServerKey: "mcp_x_12345678", ToolName: "file", Line: 9,
		InputBindings: map[string]Binding{"title": {Source: BindValue, Value: "${run.id}"}}}}
	other := []*PostRunAction{{Name: "ticket", On: PostRunAlways, ServerKey: "mcp_x_12345678", ToolName: "file",
		InputBindings: map[string]Binding{"title": {Source: BindValue, Value: "${run.id}"}}}}
	if PostRunHash(a) == "" || PostRunHash(a) != PostRunHash(moved) {
		t.Errorf("moving the actions in the file changed their hash")
	}
	if PostRunHash(a) == PostRunHash(other) {
		t.Errorf("changing when an action runs kept its hash")
	}
	if PostRunHash(nil) != "" {
		t.Errorf("no actions: got a hash")
	}
}

func TestStopRequestSettle(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, c := range []struct {
		status  StopStatus
		expires time.Time
		want    StopStatus
	}{
		{StopPending, now.Add(time.Minute), StopPending},
		{StopPending, now, StopExpired},
		{StopPending, now.Add(-time.Minute), StopExpired},
		{StopApproved, now.Add(-time.Minute), StopApproved},
		{StopDenied, now.Add(-time.Minute), StopDenied},
	} {
		r := &StopRequest{Status: c.status, ExpiresAt: c.expires}
		r.Settle(now)
		if r.Status != c.want {
			t.Errorf("%s expiring %s: got %s, want %s", c.status, c.expires.Sub(now), r.Status, c.want)
		}
	}
}
