package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// DecideStopRequest records the run executor's decision on a pending
// request. Returns NOT_FOUND, PERMISSION_DENIED, APPROVAL_EXPIRED, CONFLICT.
func (d *DB) DecideStopRequest(ctx context.Context, id, by, via string, approve bool) (*duet.StopRequest, error) {
	var out *duet.StopRequest
	err := d.tx(ctx, func(tx pgx.Tx) error {
		s, err := storerules.ScanStop(tx.QueryRow(ctx, `SELECT `+storerules.StopColumns+` FROM stop_requests s
			WHERE s.id = $1 AND (s.requested_by = $2 OR s.executor = $2) FOR UPDATE`, id, by))
		if err != nil {
			return found(err, "stop request", id)
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
