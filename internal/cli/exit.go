package cli

import (
	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/report"
)

// The exit codes of duet run --wait are the report's (report.ExitCode).
const (
	ExitPassed = report.ExitPassed
	ExitFailed = report.ExitFailed
	ExitUsage  = report.ExitUsage
	ExitInfra  = report.ExitInfra
)

const statusFlaky = report.StatusFlaky

func runExit(run *duet.Run, execs []*duet.Execution, failOnFlaky bool) (int, string) {
	return report.ExitCode(run, execs, failOnFlaky)
}

// startExit is the exit code of a run that could not start.
func startExit(err error) error {
	c := report.CodeExit(duet.ErrorCode(err))
	if c == ExitFailed {
		return err
	}
	return &exitError{c, err}
}
