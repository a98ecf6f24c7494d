package cli

import (
	"testing"

	"github.com/duet-test/duet"
)

// TestRunExit: the worst of what happened decides; an infrastructure or
// configuration code counts whatever the case's status; --fail-on-flaky
// reads the cases' statuses (flaky arrives with retries, issue 27).
func TestRunExit(t *testing.T) {
	passed := &duet.Run{Status: duet.StatusPassed}
	failed := &duet.Run{Status: duet.StatusFailed, ErrorCode: duet.CodeAssertionFailed}
	errored := &duet.Run{Status: duet.StatusError, ErrorCode: duet.CodeBrowserUnavailable}
	x := func(st duet.RunStatus, codes ...duet.Code) *duet.Execution {
		e := &duet.Execution{Status: st, CaseTitle: "c"}
		for i, c := range codes {
			e.Results = append(e.Results, &duet.StepResult{Index: i, Status: st, ErrorCode: c})
		}
		return e
	}
	for _, tt := range []struct {
		name  string
		run   *duet.Run
		execs []*duet.Execution
		flaky bool
		want  int
	}{
		{"passed", passed, []*duet.Execution{x(duet.StatusPassed)}, false, 0},
		{"assertion", failed, []*duet.Execution{x(duet.StatusPassed), x(duet.StatusFailed, duet.CodeAssertionFailed)}, false, 1},
		{"cancelled", &duet.Run{Status: duet.StatusCancelled}, []*duet.Execution{x(duet.StatusCancelled)}, false, 1},
		{"mcp down", failed, []*duet.Execution{x(duet.StatusFailed, duet.CodeMCPUnreachable)}, false, 3},
		{"browser down", errored, []*duet.Execution{x(duet.StatusError, duet.CodeBrowserUnavailable)}, false, 3},
		{"not registered", failed, []*duet.Execution{x(duet.StatusFailed, duet.CodeMCPServerNotConfigured)}, false, 2},
		{"infra over config over failure", failed, []*duet.Execution{x(duet.StatusFailed, duet.CodeAssertionFailed), x(duet.StatusFailed, duet.CodeMCPAuthFailed), x(duet.StatusFailed, duet.CodeMCPUnreachable)}, false, 3},
		{"optional step", passed, []*duet.Execution{{Status: duet.StatusPassed, Results: []*duet.StepResult{{ErrorCode: duet.CodeMCPUnreachable, Optional: true}}}}, false, 0},
		{"flaky allowed", passed, []*duet.Execution{x(statusFlaky)}, false, 0},
		{"flaky refused", passed, []*duet.Execution{x(duet.StatusPassed), x(statusFlaky)}, true, 1},
	} {
		if got, why := runExit(tt.run, tt.execs, tt.flaky); got != tt.want {
			t.Errorf("%s: exit %d (%s), want %d", tt.name, got, why, tt.want)
		}
	}
}
