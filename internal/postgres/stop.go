package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// CreateStopRequest stores r. Returns INVALID_ARGUMENT, NOT_FOUND (no such
// run).
func (d *DB) CreateStopRequest(ctx context.Context, r *duet.StopRequest) error {
	if err := storerules.NewStopRequest(r, d.now()); err != nil {
		return err
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO stop_requests (id, run_id, task_id, executor, requested_by, reason, trace_id, status, via, decided_by, created_at, expires_at, decided_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		r.ID, r.RunID, r.TaskID, r.Executor, r.RequestedBy, r.Reason, r.TraceID, r.Status, r.Via, r.DecidedBy,
		r.CreatedAt, r.ExpiresAt, nullTime(r.DecidedAt))
	return mapErr(err)
}

// FindStopRequest returns a request viewer made or may decide. Returns
// NOT_FOUND.
func (d *DB) FindStopRequest(ctx context.Context, viewer, id string) (*duet.StopRequest, error) {
	s, err := storerules.ScanStop(d.pool.QueryRow(ctx, `SELECT `+storerules.StopColumns+` FROM stop_requests s
		WHERE s.id = $1 AND ($2 = '' OR s.requested_by = $2 OR s.executor = $2)`, id, viewer))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storerules.NotFound("stop request", id)
	} else if err != nil {
		return nil, mapErr(err)
	}
	s.Settle(d.now())
	return s, nil
}

// FindStopRequests returns the requests f selects, newest first.
func (d *DB) FindStopRequests(ctx context.Context, f duet.StopRequestFilter) ([]*duet.StopRequest, error) {
	if f.User == "" {
		return nil, duet.Errorf(duet.CodeInvalidArgument, "whose stop requests?")
	}
	now := d.now()
	a := args{f.User}
	q := `SELECT ` + storerules.StopColumns + ` FROM stop_requests s WHERE (s.executor = $1 OR s.requested_by = $1)`
	if f.RunID != "" {
		q += ` AND s.run_id = ` + a.add(f.RunID)
	}
	if f.Pending {
		q += ` AND s.status = 'pending' AND s.expires_at > ` + a.add(now)
	}
	q += ` ORDER BY s.id DESC LIMIT ` + a.add(storerules.ClampLimit(f.Limit, 50, 500))
	rows, err := d.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, storerules.ScanStop)
	if err != nil {
		return nil, err
	}
	for _, s := range out {
		s.Settle(now)
	}
	return out, nil
}

// DecideStopRequest records the run executor's decision on a pending
// request. Returns NOT_FOUND, PERMISSION_DENIED, APPROVAL_EXPIRED, CONFLICT.
func (d *DB) DecideStopRequest(ctx context.Context, id, by, via string, approve bool) (*duet.StopRequest, error) {
	var out *duet.StopRequest
	err := d.tx(ctx, func(tx pgx.Tx) error {
		s, err := storerules.ScanStop(tx.QueryRow(ctx, `SELECT `+storerules.StopColumns+` FROM stop_requests s
			WHERE s.id = $1 AND (s.requested_by = $2 OR s.executor = $2) FOR UPDATE`, id, by))
		if errors.Is(err, pgx.ErrNoRows) {
			return storerules.NotFound("stop request", id)
		} else if err != nil {
			return mapErr(err)
		}
		now := ts(d.now()).UTC()
		s.Settle(now)
		if err := storerules.Decidable(s, by); err != nil {
			return err
		}
		s.Status, s.Via, s.DecidedBy, s.DecidedAt = duet.StopDenied, via, by, &now
		if approve {
			s.Status = duet.StopApproved
		}
		if _, err := tx.Exec(ctx, `UPDATE stop_requests SET status = $1, via = $2, decided_by = $3, decided_at = $4 WHERE id = $5`,
			s.Status, s.Via, s.DecidedBy, now, s.ID); err != nil {
			return mapErr(err)
		}
		out = s
		return nil
	})
	return out, err
}
