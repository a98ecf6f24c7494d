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
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.CancelCheck <= 0 {
		opts.CancelCheck = 300 * time.Millisecond
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 5
	}
	if opts.MaxLost <= 0 {
		opts.MaxLost = 2
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 5 * time.Second
	}
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

// Run takes and executes runs until ctx ends. On the way out it gives runs in
// flight ShutdownGrace to finish their current step, then interrupts them and
// puts them back in the queue, so a later worker resumes them.
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
		run, err := w.store.ClaimRun(ctx, w.opts.ID, w.opts.Lease)
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
			w.execute(runCtx, run)
		})
	}
}

// ExecuteRun claims run id and executes it in the calling goroutine; it
// returns (false, nil) when another worker holds it.
func (w *Worker) ExecuteRun(ctx context.Context, runID string) (bool, error) {
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
	w.execute(runCtx, run)
	return true, nil
}

// execute runs one claimed run under a lease kept alive by a heartbeat; a
// cancellation request seen on renewal cancels it.
func (w *Worker) execute(ctx context.Context, run *duet.Run) {
	log := w.log.With("run", run.ID, "attempt", run.Attempt)
	abandon := ""
	switch {
	case run.Lost >= w.opts.MaxLost:
		abandon = fmt.Sprintf("the worker running this run was lost %d times (it crashed, was killed or ran out of memory while running it; the run may be what brings workers down), so it is not resumed again", run.Lost)
	case run.Attempt > w.opts.MaxAttempts:
		abandon = fmt.Sprintf("the run was interrupted %d times (worker crash or shutdown) and was not resumed again", run.Attempt-1)
	}
	if abandon != "" {
		now := time.Now()
		run.Status, run.FinishedAt = duet.StatusError, &now
		run.ErrorCode, run.ErrorMessage = duet.CodeInterrupted, abandon
		if err := w.store.FinishRun(context.WithoutCancel(ctx), run); err != nil {
			log.ErrorContext(ctx, "ending an abandoned run", "err", err)
		}
		log.WarnContext(ctx, "run abandoned", "reason", abandon)
		return
	}
	if run.CancelRequested {
		now := time.Now()
		run.Status, run.FinishedAt, run.ErrorCode, run.ErrorMessage = duet.StatusCancelled, &now, duet.CodeCancelled, "cancelled at the user's request"
		if err := w.store.FinishRun(context.WithoutCancel(ctx), run); err != nil {
			log.ErrorContext(ctx, "finishing a cancelled run", "err", err)
		}
		return
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		t := time.NewTicker(w.opts.CancelCheck)
		defer t.Stop()
		lastRenew := time.Now()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				if time.Since(lastRenew) < w.opts.Lease/3 {
					cur, err := w.store.FindRunByID(rctx, "", run.ID)
					if err == nil && cur.CancelRequested {
						run.CancelRequested = true
						cancel(ErrCancelRequested)
						return
					}
					continue
				}
				lastRenew = time.Now()
				cur, err := w.store.RenewLease(rctx, run.ID, w.opts.ID, w.opts.Lease)
				switch {
				case duet.ErrorCode(err) == duet.CodeConflict:
					log.WarnContext(rctx, "lost the lease on a run; stopping it")
					cancel(ErrShutdown)
					return
				case err != nil:
					log.WarnContext(rctx, "renewing a lease", "err", err)
				case cur.CancelRequested:
					run.CancelRequested = true
					cancel(ErrCancelRequested)
					return
				}
			}
		}
	}()
	log.InfoContext(ctx, "run started")
	err := w.engine.Execute(rctx, run)
	cancel(nil)
	<-hbDone
	switch {
	case errors.Is(err, ErrShutdown):
		rel, c := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer c()
		if err := w.store.ReleaseRun(rel, run.ID, w.opts.ID); err != nil {
			log.ErrorContext(ctx, "releasing a run", "err", err)
		}
		log.InfoContext(ctx, "run interrupted; it will resume on the next start")
	case err != nil:
		log.ErrorContext(ctx, "run failed", "err", err)
	default:
		log.InfoContext(ctx, "run finished", "status", run.Status)
	}
}
