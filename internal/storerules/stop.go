package storerules

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
)

// Stored is t as both engines keep a time: to the microsecond, in UTC.
func Stored(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

// NewStopRequest checks r and readies it to be written at now: an id
// unless it has one, created now, its times as the store keeps them.
// Returns INVALID_ARGUMENT.
func NewStopRequest(r *duet.StopRequest, now time.Time) error {
	if err := duet.ValidateStopRequest(r); err != nil {
		return err
	}
	if r.ID == "" {
		r.ID = duet.NewID("stop")
	}
	r.CreatedAt, r.ExpiresAt = Stored(now), Stored(r.ExpiresAt)
	if r.DecidedAt != nil {
		t := Stored(*r.DecidedAt)
		r.DecidedAt = &t
	}
	return nil
}

// Stops is the part of duet.StopRequestStore that is the same on every
// engine; the drivers decide requests (DecideStopRequest).
type Stops struct{ E Engine }

// CreateStopRequest stores r. Returns INVALID_ARGUMENT, NOT_FOUND (no such
// run).
func (s Stops) CreateStopRequest(ctx context.Context, r *duet.StopRequest) error {
	if err := NewStopRequest(r, s.E.Now()); err != nil {
		return err
	}
	_, err := s.E.Exec(ctx, `INSERT INTO stop_requests (id, run_id, task_id, executor, requested_by, reason, trace_id, status, via, decided_by, created_at, expires_at, decided_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		r.ID, r.RunID, r.TaskID, r.Executor, r.RequestedBy, r.Reason, r.TraceID, r.Status, r.Via, r.DecidedBy,
		s.E.Stored(r.CreatedAt), s.E.Stored(r.ExpiresAt), s.E.StoredPtr(r.DecidedAt))
	return err
}

// FindStopRequest returns a request viewer made or may decide. Returns
// NOT_FOUND.
func (s Stops) FindStopRequest(ctx context.Context, viewer, id string) (*duet.StopRequest, error) {
	r, err := One(ctx, s.E, ScanStop, `SELECT `+StopColumns+` FROM stop_requests s
		WHERE s.id = $1 AND ($2 = '' OR s.requested_by = $2 OR s.executor = $2)`, id, viewer)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound("stop request", id)
	} else if err != nil {
		return nil, err
	}
	r.Settle(s.E.Now())
	return r, nil
}

// FindStopRequests returns the requests f selects, newest first.
func (s Stops) FindStopRequests(ctx context.Context, f duet.StopRequestFilter) ([]*duet.StopRequest, error) {
	if f.User == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "whose stop requests?")
	}
	now := s.E.Now()
	w := Filter{Args: []any{f.User}}
	q := `SELECT ` + StopColumns + ` FROM stop_requests s WHERE (s.executor = $1 OR s.requested_by = $1)`
	if f.RunID != "" {
		q += ` AND s.run_id = ` + w.Add(f.RunID)
	}
	if f.Pending {
		q += ` AND s.status = 'pending' AND s.expires_at > ` + w.Add(s.E.Stored(now))
	}
	q += ` ORDER BY s.id DESC LIMIT ` + w.Add(ClampLimit(f.Limit, 50, 500))
	out, err := All(ctx, s.E, ScanStop, q, w.Args...)
	for _, r := range out {
		r.Settle(now)
	}
	return out, err
}
