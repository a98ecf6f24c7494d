package report

import (
	"fmt"

	"github.com/duet-test/duet"
)

// Exit codes of a run for CI pipelines (`duet run --wait`, the JSON
// report's exit; docs/ci.md): the worst of what happened decides,
// infrastructure over configuration over test failures.
const (
	ExitPassed = 0 // every case passed
	ExitFailed = 1 // a case failed (an assertion, a step, a timeout), the run was cancelled, or --fail-on-flaky and a case was flaky
	ExitUsage  = 2 // a usage or configuration error: bad arguments, an unknown task, a missing MCP registration, credentials refused, an approval missing, a report file that cannot be written
	ExitInfra  = 3 // the infrastructure failed: the browser, a device or an MCP server was unavailable, the database, a lost worker
)

// StatusFlaky is the status of a case that failed and then passed on a
// retry (duet.StatusFlaky): a pass, unless --fail-on-flaky.
const StatusFlaky = duet.StatusFlaky

// infraCodes are failures of what the tests run on, not of the product
// under test.
var infraCodes = map[duet.Code]bool{
	duet.CodeBrowserUnavailable: true, duet.CodeBrowserProtocolMismatch: true, duet.CodeBrowserVersionUnsupported: true,
	duet.CodeDeviceLost: true, duet.CodeMCPUnreachable: true, duet.CodeMCPProtocolMismatch: true,
	duet.CodeUnavailable: true, duet.CodeInternal: true, duet.CodeInterrupted: true, duet.CodeLLMError: true,
}

// configCodes are failures a person fixes in Duet's setup, not in the
// product: a registration, a credential, an approval, the network policy.
var configCodes = map[duet.Code]bool{
	duet.CodeMCPServerNotConfigured: true, duet.CodeMCPAuthFailed: true, duet.CodeMCPAuthIssuerMismatch: true,
	duet.CodeApprovalRequired: true, duet.CodeURLRefused: true, duet.CodeLLMNotConfigured: true,
	duet.CodeInvalidArgument: true, duet.CodeNotFound: true, duet.CodePermissionDenied: true,
	duet.CodeUnauthenticated: true, duet.CodeInsufficientScope: true, duet.CodeRateLimited: true,
}

// CodeExit is the exit code an error code stands for when it stopped a
// run, or a case: ExitInfra, ExitUsage, or ExitFailed for a test failure.
func CodeExit(c duet.Code) int {
	switch {
	case infraCodes[c]:
		return ExitInfra
	case configCodes[c]:
		return ExitUsage
	}
	return ExitFailed
}

// ExitCode is the exit code of a finished run with its executions, and why
// (empty for a pass). A case stopped by an infrastructure or configuration
// error counts as such whatever its status; the step codes say which.
func ExitCode(run *duet.Run, execs []*duet.Execution, failOnFlaky bool) (int, string) {
	code, why := ExitPassed, ""
	worse := func(c int, reason string) {
		if c > code {
			code, why = c, reason
		}
	}
	if run.Status != duet.StatusPassed {
		c := ExitFailed
		if run.Status == duet.StatusError && run.ErrorCode != "" {
			c = CodeExit(run.ErrorCode)
		}
		worse(c, fmt.Sprintf("run %s: %s", run.Status, run.ErrorCode))
	}
	flaky := 0
	for _, x := range execs {
		switch x.Status {
		case duet.StatusPassed, duet.StatusPending, duet.StatusSkipped:
		case StatusFlaky:
			flaky++
		default:
			worse(ExitFailed, fmt.Sprintf("case %q %s", x.CaseTitle, x.Status))
			if x.ErrorCode != "" {
				worse(CodeExit(x.ErrorCode), fmt.Sprintf("case %q: %s", x.CaseTitle, x.ErrorCode))
			}
			for _, r := range x.Results {
				if r.ErrorCode != "" && !r.Optional {
					worse(CodeExit(r.ErrorCode), fmt.Sprintf("case %q step %d: %s", x.CaseTitle, r.Index+1, r.ErrorCode))
				}
			}
		}
	}
	if failOnFlaky && flaky > 0 {
		worse(ExitFailed, fmt.Sprintf("%d flaky case(s) and --fail-on-flaky", flaky))
	}
	return code, why
}

// Exit is a run's exit code for CI, and why.
type Exit struct {
	Code   int    `json:"code" jsonschema:"0 passed, 1 failures, 2 usage or configuration, 3 infrastructure"`
	Reason string `json:"reason,omitempty"`
}
