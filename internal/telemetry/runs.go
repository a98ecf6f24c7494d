package telemetry

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/duet-test/duet"
)

// runSpans keeps the spans of runs and case executions in progress in this
// process, so that their steps, invoke() calls and http requests become
// their children. A run's span joins the trace of the call that started it
// (the run's traceId, which the audit records).
type runSpans struct {
	mu      sync.Mutex
	runs    map[string]trace.Span      // by run id
	ctxs    map[string]context.Context // run span context by run id
	byTrace map[string]context.Context // run span context by trace id
	execs   map[string]context.Context // case span context by execution id
}

func newRunSpans() *runSpans {
	return &runSpans{runs: map[string]trace.Span{}, ctxs: map[string]context.Context{}, byTrace: map[string]context.Context{}, execs: map[string]context.Context{}}
}

// runContext returns the context of the run span of trace id, if a run of
// that trace is executing here.
func (t *Telemetry) runContext(ctx context.Context, traceID string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	t.runs.mu.Lock()
	rc, ok := t.runs.byTrace[traceID]
	t.runs.mu.Unlock()
	if ok {
		return trace.ContextWithSpanContext(ctx, trace.SpanContextFromContext(rc))
	}
	return inTrace(ctx, traceID)
}

// runClaimed: a worker took run.
func (t *Telemetry) runClaimed(run *duet.Run) {
	now := time.Now()
	if t.m != nil && run.Attempt <= 1 {
		t.m.queueDepth.Dec()
		t.m.queueWait.Observe(seconds(now.Sub(run.CreatedAt)))
	}
	if !t.Tracing() {
		return
	}
	ctx, span := t.tracer.Start(inTrace(context.Background(), run.TraceID), "run", trace.WithAttributes(
		attribute.String("duet.run_id", run.ID), attribute.String("duet.task_id", run.TaskID),
		attribute.Int("duet.attempt", run.Attempt)))
	t.runs.mu.Lock()
	defer t.runs.mu.Unlock()
	if old, ok := t.runs.runs[run.ID]; ok {
		old.End()
	}
	t.runs.runs[run.ID], t.runs.ctxs[run.ID], t.runs.byTrace[run.TraceID] = span, ctx, ctx
}

// runEnded: a run finished (status) or was put back in the queue.
func (t *Telemetry) runEnded(runID string, run *duet.Run, released bool) {
	if t.m != nil && run != nil && !released {
		t.m.runsFinished.WithLabelValues(labelStatus(run.Status)).Inc()
		if run.StartedAt != nil {
			end := time.Now()
			if run.FinishedAt != nil {
				end = *run.FinishedAt
			}
			t.m.runDuration.WithLabelValues(labelStatus(run.Status)).Observe(seconds(end.Sub(*run.StartedAt)))
		}
	}
	if !t.Tracing() {
		return
	}
	t.runs.mu.Lock()
	span, ok := t.runs.runs[runID]
	ctx := t.runs.ctxs[runID]
	delete(t.runs.runs, runID)
	delete(t.runs.ctxs, runID)
	for k, v := range t.runs.byTrace {
		if v == ctx {
			delete(t.runs.byTrace, k)
		}
	}
	t.runs.mu.Unlock()
	if !ok {
		return
	}
	switch {
	case released:
		span.SetAttributes(attribute.Bool("duet.released", true))
	case run != nil:
		span.SetAttributes(attribute.String("duet.status", string(run.Status)))
		if run.Status == duet.StatusError || run.Status == duet.StatusFailed {
			span.SetStatus(codes.Error, string(run.Status))
		}
	}
	span.End()
}

// caseStarted: an execution of a case began.
func (t *Telemetry) caseStarted(x *duet.Execution) {
	if !t.Tracing() {
		return
	}
	t.runs.mu.Lock()
	parent, ok := t.runs.ctxs[x.RunID]
	t.runs.mu.Unlock()
	if !ok {
		parent = context.Background()
	}
	ctx, span := t.tracer.Start(parent, "case "+x.CaseTitle, trace.WithAttributes(
		attribute.String("duet.execution_id", x.ID), attribute.String("duet.case_id", x.CaseID)))
	_ = span
	t.runs.mu.Lock()
	t.runs.execs[x.ID] = ctx
	t.runs.mu.Unlock()
}

// stepDone: a step finished; its span is recorded with its own times.
func (t *Telemetry) stepDone(executionID string, r *duet.StepResult) {
	if t.m != nil {
		t.m.steps.WithLabelValues(string(r.Kind), labelStatus(r.Status)).Inc()
		t.m.stepDuration.WithLabelValues(string(r.Kind)).Observe(seconds(time.Duration(r.DurationMs) * time.Millisecond))
		r.Walk(t.m.aiStepDone)
	}
	if !t.Tracing() {
		return
	}
	t.runs.mu.Lock()
	parent, ok := t.runs.execs[executionID]
	t.runs.mu.Unlock()
	if !ok {
		return
	}
	start, end := time.Now().Add(-time.Duration(r.DurationMs)*time.Millisecond), time.Now()
	if r.StartedAt != nil {
		start = *r.StartedAt
	}
	if r.FinishedAt != nil {
		end = *r.FinishedAt
	}
	_, span := t.tracer.Start(parent, fmt.Sprintf("step %d %s", r.Index+1, r.Kind), trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String("duet.step_kind", string(r.Kind)), attribute.String("duet.status", string(r.Status))))
	if r.ErrorCode != "" {
		span.SetAttributes(attribute.String("duet.code", string(r.ErrorCode)))
		span.SetStatus(codes.Error, string(r.ErrorCode))
	}
	span.End(trace.WithTimestamp(end))
}

// caseDone: an execution finished.
func (t *Telemetry) caseDone(x *duet.Execution) {
	if t.m != nil {
		t.m.executions.WithLabelValues(labelStatus(x.Status)).Inc()
	}
	if !t.Tracing() {
		return
	}
	t.runs.mu.Lock()
	ctx, ok := t.runs.execs[x.ID]
	delete(t.runs.execs, x.ID)
	t.runs.mu.Unlock()
	if !ok {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.String("duet.status", string(x.Status)))
	if x.Status == duet.StatusError || x.Status == duet.StatusFailed {
		span.SetStatus(codes.Error, string(x.Status))
	}
	span.End()
}

// aiStepDone counts what an AI step (or one a flow step ran) cost: its
// model calls and tokens, and whether it asked the model, replayed the
// cache or healed.
func (m *metrics) aiStepDone(r *duet.StepResult) {
	u := r.AI
	if u == nil {
		return
	}
	kind := string(r.Kind)
	source := "model"
	switch {
	case u.Healed:
		source = "healed"
	case u.Cached:
		source = "cache"
	}
	m.aiSteps.WithLabelValues(kind, source).Inc()
	m.aiCalls.WithLabelValues(kind).Add(float64(u.Calls))
	m.aiTokens.WithLabelValues(kind, "prompt").Add(float64(u.PromptTokens))
	m.aiTokens.WithLabelValues(kind, "completion").Add(float64(u.CompletionTokens))
}
