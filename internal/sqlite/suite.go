package sqlite

import (
	"context"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// suiteTx is storerules.SuiteTx on a SQLite transaction: the rows written
// the same on every engine (SuiteRows) and those written here.
type suiteTx struct {
	storerules.SuiteRows
	tx *cachedTx
}

// suiteTx is the suite rows of tx.
func (d *DB) suiteTx(tx *cachedTx) suiteTx {
	return suiteTx{storerules.SuiteRows{E: d.engineOn(tx)}, tx}
}

func (t suiteTx) SetShares(ctx context.Context, taskID string, users []string, now time.Time) error {
	return setShares(ctx, t.tx, taskID, users, micros(now))
}

func (t suiteTx) SuiteSchedules(ctx context.Context, owner, taskID string) ([]*duet.Schedule, error) {
	return all(ctx, t.tx, storerules.ScanSchedule, `SELECT `+storerules.ScheduleColumns+` FROM schedules s WHERE s.task_id = ? AND s.owner = ? AND s.source = ?`, taskID, owner, duet.ScheduleFromSuite)
}
