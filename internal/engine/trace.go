package engine

import (
	"context"
	"strings"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
	"github.com/duet-test/duet/internal/trace"
)

// Tracer is a BrowserSession that records a trace of its page
// (internal/browser's sessions are). A driver without it leaves a case's
// trace without browser evidence: its steps only.
type Tracer interface {
	// StartTrace starts recording.
	StartTrace(ctx context.Context, o trace.RecordOptions) error
	// TraceStepBegin and TraceStepEnd mark a browser step.
	// TraceStepEnd reads the page's DOM (dom) and takes a screenshot of
	// it (shot) as the step left it.
	TraceStepBegin(index int)
	TraceStepEnd(ctx context.Context, index int, dom, shot bool)
	// StopTrace ends the recording and returns it when keep is true.
	StopTrace(ctx context.Context, keep bool) *trace.Capture
}

// TraceSaver is an Artifacts that keeps traces (*artifact.Store is one).
type TraceSaver interface {
	// SaveTrace stores the trace zip of an execution and returns its
	// artifact id.
	SaveTrace(ctx context.Context, runID, executionID string, data []byte) (string, error)
}

// traceMode returns the trace mode of the case: the run's, else the task's,
// else the engine's default. An unknown stored value counts as the default
// (the compiler and start_test_run refuse unknown names).
func (cr *caseRun) traceMode() trace.Mode {
	run, _ := trace.ParseMode(cr.run.Trace)
	task, _ := trace.ParseMode(cr.task.Trace)
	return trace.Resolve(run, task, cr.e.opts.Trace)
}

// startTrace starts recording on the case's new browser session, when the
// case records a trace and the session can.
func (cr *caseRun) startTrace(ctx context.Context, s BrowserSession) {
	if !cr.traceMode().Records(cr.retry()) {
		return
	}
	t, ok := s.(Tracer)
	if !ok {
		return
	}
	o := cr.e.opts.TraceRecord
	replay := cr.traceMode().Replays(cr.retry(), cr.e.opts.TraceReplay)
	o.NoReplay = o.NoReplay || !replay
	if err := t.StartTrace(ctx, o); err != nil {
		cr.e.log.WarnContext(ctx, "cannot record a trace", "run", cr.run.ID, "execution", cr.x.ID, "err", duet.ErrorMessage(err))
		return
	}
	cr.tracer, cr.replay = t, !o.NoReplay
}

// traceBegin marks the start of a browser step in the trace.
func (cr *caseRun) traceBegin(st *duet.Step) {
	if cr.tracer != nil && step.NeedsBrowser(st.Kind) {
		cr.tracer.TraceStepBegin(st.Index)
	}
}

// traceEnd marks the end of a browser step; shot is the screenshot the
// engine took because it failed (nil otherwise). Under on, every step
// gets its DOM and an exact screenshot; under the other modes, which must
// cost a passing case next to nothing, a step's screenshots are the
// screencast's frames and only a step that failed gets its DOM (and the
// engine's failure screenshot). A recording without a replay has no
// frames: there every step gets its DOM, which costs the page a fraction
// of what the screencast would.
func (cr *caseRun) traceEnd(ctx context.Context, st *duet.Step, res *duet.StepResult, shot []byte) {
	if cr.tracer == nil || !step.NeedsBrowser(st.Kind) {
		return
	}
	if len(shot) > 0 {
		if cr.shots == nil {
			cr.shots = map[int][]byte{}
		}
		cr.shots[st.Index] = shot
	}
	every := cr.traceMode() == trace.On
	bad := res.Status != duet.StatusPassed
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	cr.tracer.TraceStepEnd(tctx, st.Index, every || bad || !cr.replay, every && len(shot) == 0)
}

// retry is the retry number of the attempt running (0 the first attempt).
func (cr *caseRun) retry() int { return max(cr.x.Attempt, 1) - 1 }

// finishTrace ends the attempt's trace: kept as the mode says for how the
// attempt ended and which retry it is, built from its results and the
// browser's recording, scrubbed of the run's secrets and saved beside the
// run's other artifacts. A case keeps one trace: that of its last attempt
// the mode keeps (under on-failure, a flaky case keeps its failed one's).
func (cr *caseRun) finishTrace(ctx context.Context) {
	mode := cr.traceMode()
	passed := cr.x.Status == duet.StatusPassed || cr.x.Status == duet.StatusFlaky
	keep := mode.Keep(passed, cr.retry())
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var c *trace.Capture
	if cr.tracer != nil {
		c = cr.tracer.StopTrace(ctx, keep)
		cr.tracer = nil
	}
	if !keep || !mode.Records(cr.retry()) {
		return
	}
	saver, ok := cr.e.opts.Artifacts.(TraceSaver)
	if !ok {
		return
	}
	meta := trace.Meta{RunID: cr.run.ID, ExecutionID: cr.x.ID, CaseKey: cr.x.CaseKey, CaseTitle: cr.x.CaseTitle, Mode: mode,
		Status: cr.x.Status, ErrorCode: cr.x.ErrorCode, Error: cr.x.ErrorMessage}
	if cr.x.StartedAt != nil {
		meta.Started = *cr.x.StartedAt
	}
	if cr.x.FinishedAt != nil {
		meta.Finished = *cr.x.FinishedAt
	} else {
		meta.Finished = time.Now()
	}
	for _, r := range cr.x.Results {
		if r.Status == duet.StatusSkipped {
			continue
		}
		si := trace.StepInfo{Index: r.Index, Kind: r.Kind, Name: r.Name, Status: r.Status, ErrorCode: r.ErrorCode, Error: r.ErrorMessage,
			Action: isAction(r.Kind), Shot: cr.shots[r.Index]}
		if r.StartedAt != nil {
			si.Start = *r.StartedAt
		}
		if r.FinishedAt != nil {
			si.End = *r.FinishedAt
		}
		meta.Steps = append(meta.Steps, si)
	}
	data, _, err := trace.Build(meta, c, cr.secrets, cr.e.opts.TraceMaxBytes)
	if err == nil {
		_, err = saver.SaveTrace(ctx, cr.run.ID, cr.x.ID, data)
	}
	if err != nil {
		cr.e.log.WarnContext(ctx, "no trace of a case", "run", cr.run.ID, "execution", cr.x.ID, "err", cr.secrets.Scrub(err.Error()))
	}
}

// isAction reports whether a step of kind acts on the page (its trace
// step gets a screenshot before it too): a browser kind that does not
// only wait, read, assert or photograph.
func isAction(kind duet.StepKind) bool {
	if !step.NeedsBrowser(kind) || strings.HasPrefix(string(kind), "assert") {
		return false
	}
	switch kind {
	case duet.StepWaitFor, duet.StepExtract, duet.StepScreenshot:
		return false
	}
	return true
}
