package sqlite

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// DecideStopRequest records the run executor's decision on a pending
// request. Returns NOT_FOUND, PERMISSION_DENIED, APPROVAL_EXPIRED, CONFLICT.
func (d *DB) DecideStopRequest(ctx context.Context, id, by, via string, approve bool) (*duet.StopRequest, error) {
	var out *duet.StopRequest
	err := d.tx(ctx, func(tx *cachedTx) error {
		s, err := storerules.ScanStop(tx.QueryRowContext(ctx, `SELECT `+storerules.StopColumns+` FROM stop_requests s
			WHERE s.id = ?1 AND (s.requested_by = ?2 OR s.executor = ?2)`, id, by))
		if err != nil {
			return found(err, "stop request", id)
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
