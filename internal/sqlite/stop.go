package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// CreateStopRequest stores r. Returns INVALID_ARGUMENT, NOT_FOUND (no such
// run).
func (d *DB) CreateStopRequest(ctx context.Context, r *duet.StopRequest) error {
	if err := storerules.NewStopRequest(r, d.now()); err != nil {
		return err
	}
	_, err := d.q.ExecContext(ctx, `INSERT INTO stop_requests (id, run_id, task_id, executor, requested_by, reason, trace_id, status, via, decided_by, created_at, expires_at, decided_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.RunID, r.TaskID, r.Executor, r.RequestedBy, r.Reason, r.TraceID, r.Status, r.Via, r.DecidedBy,
		micros(r.CreatedAt), micros(r.ExpiresAt), nullMicros(r.DecidedAt))
	return mapErr(err)
}

// FindStopRequest returns a request viewer made or may decide. Returns
// NOT_FOUND.
func (d *DB) FindStopRequest(ctx context.Context, viewer, id string) (*duet.StopRequest, error) {
	s, err := storerules.ScanStop(d.q.QueryRowContext(ctx, `SELECT `+storerules.StopColumns+` FROM stop_requests s
		WHERE s.id = ?1 AND (?2 = '' OR s.requested_by = ?2 OR s.executor = ?2)`, id, viewer))
	if errors.Is(err, sql.ErrNoRows) {
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
	q := `SELECT ` + storerules.StopColumns + ` FROM stop_requests s WHERE (s.executor = ? OR s.requested_by = ?)`
	args := []any{f.User, f.User}
	if f.RunID != "" {
		q += ` AND s.run_id = ?`
		args = append(args, f.RunID)
	}
	if f.Pending {
		q += ` AND s.status = 'pending' AND s.expires_at > ?`
		args = append(args, micros(now))
	}
	args = append(args, storerules.ClampLimit(f.Limit, 50, 500))
	rows, err := d.q.QueryContext(ctx, q+` ORDER BY s.id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	out, err := collect(rows, storerules.ScanStop)
	for _, s := range out {
		s.Settle(now)
	}
	return out, err
}

// DecideStopRequest records the run executor's decision on a pending
// request. Returns NOT_FOUND, PERMISSION_DENIED, APPROVAL_EXPIRED, CONFLICT.
func (d *DB) DecideStopRequest(ctx context.Context, id, by, via string, approve bool) (*duet.StopRequest, error) {
	var out *duet.StopRequest
	err := d.tx(ctx, func(tx *sql.Tx) error {
		s, err := storerules.ScanStop(tx.QueryRowContext(ctx, `SELECT `+storerules.StopColumns+` FROM stop_requests s
			WHERE s.id = ?1 AND (s.requested_by = ?2 OR s.executor = ?2)`, id, by))
		if errors.Is(err, sql.ErrNoRows) {
			return storerules.NotFound("stop request", id)
		} else if err != nil {
			return mapErr(err)
		}
		now := d.now()
		s.Settle(now)
		if err := storerules.Decidable(s, by); err != nil {
			return err
		}
		at := fromMicros(micros(now))
		s.Status, s.Via, s.DecidedBy, s.DecidedAt = duet.StopDenied, via, by, &at
		if approve {
			s.Status = duet.StopApproved
		}
		res, err := tx.ExecContext(ctx, `UPDATE stop_requests SET status = ?, via = ?, decided_by = ?, decided_at = ? WHERE id = ? AND status = 'pending'`,
			s.Status, s.Via, s.DecidedBy, micros(at), s.ID)
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return duet.Errorf(duet.CodeConflict, "stop request %s was decided meanwhile", s.ID)
		}
		out = s
		return nil
	})
	return out, err
}
