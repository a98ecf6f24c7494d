package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

// suiteTx is storerules.SuiteTx on a PostgreSQL transaction: the rows written
// the same on every engine (SuiteRows) and those written here.
type suiteTx struct {
	storerules.SuiteRows
	tx pgx.Tx
}

// suiteTx is the suite rows of tx.
func (d *DB) suiteTx(tx pgx.Tx) suiteTx { return suiteTx{storerules.SuiteRows{E: d.engineOn(tx)}, tx} }

func (t suiteTx) SetShares(ctx context.Context, taskID string, users []string, now time.Time) error {
	return setShares(ctx, t.tx, taskID, users, now)
}

func (t suiteTx) SuiteSchedules(ctx context.Context, owner, taskID string) ([]*duet.Schedule, error) {
	return all(ctx, t.tx, scanSchedule, `SELECT `+scheduleColumns+` FROM schedules s WHERE s.task_id = $1 AND s.owner = $2 AND s.source = $3`, taskID, owner, duet.ScheduleFromSuite)
}
