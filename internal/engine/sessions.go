package engine

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/step"
)

// SessionKeeper keeps the browser sessions runs save (saveSession) for
// their later cases (session: NAME), sealed for the run's executor
// (internal/secret.Sessions).
type SessionKeeper interface {
	// SaveSession keeps state as owner's session name of run runID.
	SaveSession(ctx context.Context, runID, owner, name string, state []byte) error
	// LoadSession returns owner's session name of run runID; NOT_FOUND
	// when there is none (or it expired).
	LoadSession(ctx context.Context, runID, owner, name string) ([]byte, error)
}

// A caseRun keeps its run's browser sessions (Options.Sessions): a
// session is the run's and its executor's, never another run's.
var _ step.SessionKeeper = (*caseRun)(nil)

// SaveSession implements step.SessionKeeper.
func (cr *caseRun) SaveSession(ctx context.Context, name string, state []byte) error {
	if cr.e.opts.Sessions == nil {
		return duet.Errorf(duet.CodeSessionNotFound, "this Duet keeps no browser sessions (no master key is configured): saveSession cannot run")
	}
	return cr.e.opts.Sessions.SaveSession(ctx, cr.run.ID, cr.run.TriggeredBy, name, state)
}

// LoadSession implements step.SessionKeeper.
func (cr *caseRun) LoadSession(ctx context.Context, name string) ([]byte, error) {
	if cr.e.opts.Sessions == nil {
		return nil, duet.Errorf(duet.CodeSessionNotFound, "this Duet keeps no browser sessions (no master key is configured): session %s cannot be used", name)
	}
	return cr.e.opts.Sessions.LoadSession(ctx, cr.run.ID, cr.run.TriggeredBy, name)
}
