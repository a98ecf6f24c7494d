package report

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/trace"
)

// TraceReader is an Artifacts that keeps traces (*artifact.Store is one).
type TraceReader interface {
	// ReadTrace returns the trace zip of an execution; NOT_FOUND when the
	// case kept none.
	ReadTrace(ctx context.Context, runID, executionID string) ([]byte, error)
	// HasTrace reports whether an execution kept a trace, and its size.
	HasTrace(ctx context.Context, runID, executionID string) (int64, bool)
	// NoReplay reports that an execution's trace is known to hold no
	// replay, so that there is no video of it to offer.
	NoReplay(ctx context.Context, runID, executionID string) bool
}

// FindExecution returns the execution of run runID that ref names — its
// id, its case's id or its case's key — as viewer may see it: NOT_FOUND
// when the run does not exist, viewer may not see it, or no execution of
// it matches.
func FindExecution(ctx context.Context, store Store, viewer, runID, ref string) (*duet.Run, *duet.Execution, error) {
	run, err := store.FindRunByID(ctx, viewer, runID)
	if err != nil {
		return nil, nil, err
	}
	for x, err := range duet.Paged(func(cursor string) ([]*duet.Execution, string, error) {
		return store.FindExecutionPage(ctx, duet.ExecutionFilter{RunID: run.ID, Cursor: cursor, Limit: maxPage})
	}) {
		if err != nil {
			return nil, nil, err
		}
		if x.ID == ref || x.CaseID == ref || x.CaseKey == ref {
			return run, x, nil
		}
	}
	return nil, nil, duet.Errorf(duet.CodeNotFound, "run %s has no case %q (name it by its key, its case id or its execution id)", runID, ref)
}

// Trace returns the trace zip of the case ref (FindExecution) of run
// runID. A trace holds what the run saw with its executor's credentials —
// screenshots, page contents, console, network — so only the executor
// gets it (duet.RunDisclosure): anyone else who may see the run gets
// PERMISSION_DENIED naming who may.
//
// Errors: NOT_FOUND (no such run or case for viewer, or no trace kept),
// PERMISSION_DENIED, and the store's.
func Trace(ctx context.Context, store Store, arts Artifacts, viewer, runID, ref string) ([]byte, *duet.Execution, error) {
	run, x, err := FindExecution(ctx, store, viewer, runID, ref)
	if err != nil {
		return nil, nil, err
	}
	if duet.RunDisclosure(viewer, run) != duet.DiscloseFull {
		return nil, nil, duet.Errorf(duet.CodePermissionDenied, "the trace of case %s holds what run %s saw with %s's credentials: only %s may see it", x.CaseKey, run.ID, run.TriggeredBy, run.TriggeredBy)
	}
	tr, ok := arts.(TraceReader)
	if !ok {
		return nil, nil, duet.Errorf(duet.CodeNotFound, "this instance keeps no traces")
	}
	data, err := tr.ReadTrace(ctx, run.ID, x.ID)
	if err != nil {
		return nil, nil, err
	}
	return data, x, nil
}

// TraceSummary returns the trace of the case ref of run runID cut to what
// a model can read in maxBytes of JSON (trace.Summarize): the step list
// and the console and network rows that bear on the failing step. Errors:
// as Trace.
func TraceSummary(ctx context.Context, store Store, arts Artifacts, viewer, runID, ref string, maxBytes int) ([]byte, error) {
	data, _, err := Trace(ctx, store, arts, viewer, runID, ref)
	if err != nil {
		return nil, err
	}
	a, err := trace.Open(data)
	if err != nil {
		return nil, err
	}
	return trace.Summarize(a.Trace, maxBytes)
}
