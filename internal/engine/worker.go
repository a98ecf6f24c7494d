package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// WorkerOptions configure a Worker. Zero values mean the documented defaults.
type WorkerOptions struct {
	// ID names this worker in leases; "" means a random id.
	ID string
	// Concurrency is how many runs execute at once; 0 means 2.
	Concurrency int
	// Lease is how long a claimed run stays with this worker without a
	// renewal; 0 means 30s. A run whose worker died is resumed by another
	// worker after its lease expires.
	Lease time.Duration
	// PollInterval is how often the queue is checked when idle; 0 means 1s.
	// Notify wakes the worker at once.
	PollInterval time.Duration
	// CancelCheck is how often a running run is checked for a cancellation
	// request; 0 means 300ms.
	CancelCheck time.Duration
	// MaxAttempts is how many times a run may be claimed (it is claimed
	// again after a crash or a shutdown) before it ends in error; 0 means 5.
	MaxAttempts int
	// MaxLost is how many times a run may lose its worker — the worker's
	// lease expired while it ran the run: it crashed, was killed or ran out
	// of memory, perhaps because of the run itself — before the run ends in
	// error instead of being resumed by another worker; 0 means 2. A
	// graceful release on shutdown is not a loss.
	MaxLost int
	// ShutdownGrace is how long Run waits, after its context ends, for the
	// steps in flight to finish before it interrupts them; 0 means 5s.
	ShutdownGrace time.Duration
	Logger        *slog.Logger
}

// Worker takes runs from the store's queue and executes them.
type Worker struct {
	store  duet.Store
	engine *Engine
	opts   WorkerOptions
	log    *slog.Logger
	wake   chan struct{}
}

// NewWorker returns a worker executing runs with engine.
func NewWorker(store duet.Store, engine *Engine, opts WorkerOptions) *Worker {
	if opts.ID == "" {
		opts.ID = duet.NewID("worker")
	}
	opts.Concurrency = positiveOr(opts.Concurrency, 2)
	opts.Lease = positiveOr(opts.Lease, 30*time.Second)
	opts.PollInterval = positiveOr(opts.PollInterval, time.Second)
	opts.CancelCheck = positiveOr(opts.CancelCheck, 300*time.Millisecond)
	opts.MaxAttempts = positiveOr(opts.MaxAttempts, 5)
	opts.MaxLost = positiveOr(opts.MaxLost, 2)
	opts.ShutdownGrace = positiveOr(opts.ShutdownGrace, 5*time.Second)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{store: store, engine: engine, opts: opts, log: log, wake: make(chan struct{}, 1)}
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.opts.ID }

// Notify wakes the worker to look at the queue now (after a run was created).
func (w *Worker) Notify() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run takes and executes runs until ctx ends. When it ends (SIGTERM) the
// worker claims no run and starts no case any more. A case in flight that
// can resume at its next step on another worker stops after its current
// step; the others get ShutdownGrace to end, then their steps are
// interrupted. Every run not finished goes back to the queue, where another
// worker resumes it (Engine.Execute).
func (w *Worker) Run(ctx context.Context) error {
	runCtx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	var wg sync.WaitGroup
	w.loop(ctx, runCtx, &wg) // returns when ctx ends; starts nothing after
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(w.opts.ShutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		stop(ErrShutdown)
		<-done
	}
	return nil
}

func (w *Worker) loop(ctx, runCtx context.Context, wg *sync.WaitGroup) {
	sem := make(chan struct{}, w.opts.Concurrency)
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if ctx.Err() != nil { // both were ready
			<-sem
			return
		}
		claimed := time.Now()
		run, err := w.store.ClaimRun(runCtx, w.opts.ID, w.opts.Lease)
		if err == nil && run != nil && ctx.Err() != nil {
			// Claimed as the worker began to stop: nothing of it ran,
			// back to the queue at once.
			w.giveBack(runCtx, ctx.Done(), duet.LeaseOf(run, w.opts.ID), "the worker is stopping")
			<-sem
			return
		}
		if err != nil || run == nil {
			<-sem
			if err != nil && ctx.Err() == nil {
				w.log.ErrorContext(ctx, "claiming a run", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			case <-time.After(w.opts.PollInterval):
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			w.execute(runCtx, ctx.Done(), run, claimed)
		})
	}
}

// ExecuteRun claims run id and executes it in the calling goroutine; it
// returns (false, nil) when another worker holds it. When ctx ends the run
// is interrupted at once and given back.
func (w *Worker) ExecuteRun(ctx context.Context, runID string) (bool, error) {
	claimed := time.Now()
	run, err := w.store.ClaimRunByID(ctx, runID, w.opts.ID, w.opts.Lease)
	if err != nil || run == nil {
		return false, err
	}
	runCtx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	go func() {
		select {
		case <-ctx.Done():
			stop(ErrShutdown)
		case <-runCtx.Done():
		}
	}()
	w.execute(runCtx, ctx.Done(), run, claimed)
	return true, nil
}

// execute runs one claimed run under a lease kept alive by a heartbeat; a
// cancellation request seen on renewal cancels it. claimed is when the
// claim was sent: the lease runs until claimed+Lease, and each renewal
// extends it from when it was sent. A worker that could not renew its lease
// in time stops the run before the lease runs out (another worker may take
// it over then), and a run stopped short of a verdict goes back to the
// queue. drain closes when the worker begins to stop.
func (w *Worker) execute(ctx context.Context, drain <-chan struct{}, run *duet.Run, claimed time.Time) {
	log := w.log.With("run", run.ID, "attempt", run.Attempt)
	lease := duet.LeaseOf(run, w.opts.ID)
	abandon := ""
	switch {
	case run.Lost >= w.opts.MaxLost:
		abandon = fmt.Sprintf("the worker running this run was lost %d times (it crashed, was killed, ran out of memory or could not reach the database while running it; the run may be what brings workers down), so it is not resumed again", run.Lost)
	case run.Attempt > w.opts.MaxAttempts:
		abandon = fmt.Sprintf("the run was interrupted %d times (worker crash, shutdown or database outage) and was not resumed again", run.Attempt-1)
	}
	end := func(status duet.RunStatus, code duet.Code, msg string) {
		now := time.Now()
		run.Status, run.FinishedAt, run.ErrorCode, run.ErrorMessage = status, &now, code, msg
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.engine.opts.WriteWait)
		defer cancel()
		err := retryUnavailable(wctx, func(ctx context.Context) error { return w.store.FinishRun(ctx, lease, run) })
		switch {
		case duet.ErrorCode(err) == duet.CodeUnavailable || duet.ErrorCode(err) == duet.CodeTimeout:
			w.giveBack(ctx, drain, lease, "the database is unavailable")
		case err != nil:
			log.ErrorContext(ctx, "ending a run", "status", status, "err", err)
		}
	}
	if abandon != "" {
		end(duet.StatusError, duet.CodeInterrupted, abandon)
		log.WarnContext(ctx, "run abandoned", "reason", abandon)
		return
	}
	if run.CancelRequested {
		end(duet.StatusCancelled, duet.CodeCancelled, "cancelled at the user's request")
		return
	}
	// hold ends when the worker no longer holds the run (its lease lost,
	// the worker stopping); rctx also when the run is cancelled. The
	// heartbeat keeps the lease while Execute runs, after a cancellation
	// too: the steps that run after one (afterEach, afterAll) run under
	// the hold (WithHold).
	hold, release := context.WithCancelCause(ctx)
	defer release(nil)
	rctx, cancel := context.WithCancelCause(hold)
	defer cancel(nil)
	hbDone, executed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(hbDone)
		w.heartbeat(hold, release, cancel, executed, lease, run, claimed, log)
	}()
	log.InfoContext(ctx, "run started")
	err := w.engine.Execute(WithHold(rctx, hold), lease, run, drain)
	close(executed)
	cancel(nil)
	<-hbDone
	switch {
	case errors.Is(err, ErrShutdown):
		w.giveBack(ctx, drain, lease, "the worker is stopping")
		log.InfoContext(ctx, "run interrupted; it will resume on the next start")
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrStoreUnavailable):
		// Stopped at once, short of a verdict: back to the queue when the
		// database answers again, unless another worker took it over.
		log.WarnContext(ctx, "run stopped without a verdict; giving it back", "err", err)
		w.giveBack(ctx, drain, lease, err.Error())
	case err != nil:
		log.ErrorContext(ctx, "run failed", "err", err)
	default:
		log.InfoContext(ctx, "run finished", "status", run.Status)
	}
}

// heartbeat keeps the lease of a run alive while it runs (until executed
// closes): it renews the lease every third of it (and at once again after
// a failed renewal), and checks for a cancellation request every
// CancelCheck, which cancels the run (cancel with ErrCancelRequested) and
// goes on renewing: what runs after a cancellation holds the run. It stops
// the run and ends the hold (release with ErrLeaseLost) when a renewal is
// refused — another worker holds the run — or when the lease is about to
// run out without a renewal (the database is away, or does not answer: each
// call ends by then): from then on another
// worker may take the run over, and no step of it may reach the system
// under test from here.
func (w *Worker) heartbeat(ctx context.Context, release, cancel context.CancelCauseFunc, executed <-chan struct{}, lease duet.Lease, run *duet.Run, claimed time.Time, log *slog.Logger) {
	t := time.NewTicker(w.opts.CancelCheck)
	defer t.Stop()
	expires := claimed.Add(w.opts.Lease)
	margin := min(w.opts.Lease/10, 2*time.Second)
	renewAt := claimed.Add(w.opts.Lease / 3)
	cancelled := false
	// lapses stops the run when the lease is about to run out unrenewed.
	lapses := func(now time.Time) bool {
		if now.Before(expires.Add(-margin)) {
			return false
		}
		log.WarnContext(ctx, "the lease on the run runs out without a renewal (database unavailable?); stopping it")
		release(fmt.Errorf("%w: its lease ran out at %s without a renewal", ErrLeaseLost, expires.Format(time.RFC3339Nano)))
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-executed:
			return
		case <-t.C:
		}
		now := time.Now()
		if lapses(now) {
			return
		}
		// Each call ends by the time the run must be stopped: a database
		// that answers nothing (a lock wait, a hung server) must not hold
		// the heartbeat past the lease while the run's steps go on.
		cctx, ccancel := context.WithDeadline(ctx, expires.Add(-margin))
		if now.Before(renewAt) {
			if cancelled {
				ccancel()
				continue
			}
			cur, err := w.store.FindRunByID(cctx, "", run.ID)
			ccancel()
			if err == nil && cur.CancelRequested {
				run.CancelRequested, cancelled = true, true
				cancel(ErrCancelRequested)
			}
			if err != nil && lapses(time.Now()) {
				return
			}
			continue
		}
		cur, err := w.store.RenewLease(cctx, lease, w.opts.Lease)
		ccancel()
		if err != nil && duet.ErrorCode(err) != duet.CodeLeaseLost && lapses(time.Now()) {
			return
		}
		switch {
		case duet.ErrorCode(err) == duet.CodeLeaseLost:
			log.WarnContext(ctx, "lost the lease on a run; stopping it")
			release(fmt.Errorf("%w: %w", ErrLeaseLost, err))
			return
		case err != nil:
			log.WarnContext(ctx, "renewing a lease", "err", err)
			continue // again at the next tick
		case cur.CancelRequested && !cancelled:
			run.CancelRequested, cancelled = true, true
			cancel(ErrCancelRequested)
		}
		expires, renewAt = now.Add(w.opts.Lease), now.Add(w.opts.Lease/3)
	}
}

// giveBack puts a run the worker stopped short of a verdict back in the
// queue, so that another worker resumes it. While the database is away it
// tries again until it answers, another worker has
// taken the run over (the release is refused: LEASE_LOST), or — once drain
// has closed — for 5 more seconds. It tries often (every half second): the
// sooner it gives the run back once the database is back, the less likely
// another worker takes the run over as lost first.
func (w *Worker) giveBack(ctx context.Context, drain <-chan struct{}, lease duet.Lease, why string) {
	ctx = context.WithoutCancel(ctx)
	var deadline <-chan time.Time
	delay := 100 * time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := w.store.ReleaseRun(rctx, lease)
		cancel()
		switch duet.ErrorCode(err) {
		case "":
			w.log.InfoContext(ctx, "run given back to the queue", "run", lease.RunID, "why", why)
			return
		case duet.CodeLeaseLost:
			w.log.InfoContext(ctx, "run not given back: another worker holds it", "run", lease.RunID)
			return
		case duet.CodeUnavailable, duet.CodeTimeout:
		default:
			w.log.ErrorContext(ctx, "releasing a run", "run", lease.RunID, "err", err)
			return
		}
		if deadline == nil && closed(drain) {
			deadline = time.After(5 * time.Second)
		}
		select {
		case <-deadline:
			w.log.ErrorContext(ctx, "releasing a run: the database is unavailable; another worker takes it over when its lease runs out", "run", lease.RunID, "err", err)
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
