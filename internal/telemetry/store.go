package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/duet-test/duet"
)

//go:generate go run ./internal/storegen

// Store decorates a store: one span per call (store.Method, child of the
// caller's span; calls outside any trace make no span), and the run
// lifecycle — created, claimed, case started, step done, case done,
// finished, released — becomes metrics and the run → case → step spans.
func (t *Telemetry) Store(s duet.Store) duet.Store {
	if !t.Tracing() && !t.Metrics() {
		return s
	}
	return &store{Store: s, t: t}
}

type store struct {
	duet.Store
	t *Telemetry
}

// storeSpan starts a span for a store call made inside a trace.
func (t *Telemetry) storeSpan(ctx context.Context, method string) (context.Context, func(error)) {
	if !t.Tracing() || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, func(error) {} // outside a trace, or in one not sampled
	}
	ctx, span := t.tracer.Start(ctx, "store."+method, trace.WithSpanKind(trace.SpanKindClient))
	return ctx, func(err error) { endSpan(span, err) }
}

func (s *store) CreateRun(ctx context.Context, p duet.StartRunParams) (rec *duet.IdempotencyRecord, replayed bool, err error) {
	ctx, end := s.t.storeSpan(ctx, "CreateRun")
	defer func() { end(err) }()
	rec, replayed, err = s.Store.CreateRun(ctx, p)
	if err == nil && !replayed && s.t.m != nil && p.Run != nil {
		s.t.m.runsCreated.WithLabelValues(labelSource(p.Run.CallSource)).Inc()
		s.t.m.queueDepth.Inc()
	}
	return rec, replayed, err
}

func (s *store) ClaimRun(ctx context.Context, worker string, lease time.Duration) (*duet.Run, error) {
	r, err := s.Store.ClaimRun(ctx, worker, lease)
	if err == nil && r != nil {
		s.t.runClaimed(r)
	}
	return r, err
}

func (s *store) ClaimRunByID(ctx context.Context, runID, worker string, lease time.Duration) (*duet.Run, error) {
	r, err := s.Store.ClaimRunByID(ctx, runID, worker, lease)
	if err == nil && r != nil {
		s.t.runClaimed(r)
	}
	return r, err
}

func (s *store) StartExecution(ctx context.Context, l duet.Lease, e *duet.Execution) error {
	err := s.Store.StartExecution(ctx, l, e)
	if err == nil {
		s.t.caseStarted(e)
	}
	return err
}

func (s *store) SaveStepResult(ctx context.Context, l duet.Lease, executionID string, r *duet.StepResult, vars map[string]any) error {
	err := s.Store.SaveStepResult(ctx, l, executionID, r, vars)
	if err == nil {
		s.t.stepDone(executionID, r)
	}
	return err
}

func (s *store) FinishExecution(ctx context.Context, l duet.Lease, e *duet.Execution) error {
	err := s.Store.FinishExecution(ctx, l, e)
	if err == nil {
		s.t.caseDone(e)
	}
	return err
}

func (s *store) FinishRun(ctx context.Context, l duet.Lease, r *duet.Run) error {
	err := s.Store.FinishRun(ctx, l, r)
	if err == nil {
		s.t.runEnded(r.ID, r, false)
	}
	return err
}

func (s *store) ReleaseRun(ctx context.Context, l duet.Lease) error {
	err := s.Store.ReleaseRun(ctx, l)
	if err == nil {
		s.t.runEnded(l.RunID, nil, true)
	}
	return err
}
