package sqlite

import (
	"context"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var (
	_ duet.BaselineStore = (*DB)(nil)
	_ duet.MetricStore   = (*DB)(nil)
)

// CreateBaseline stores b as the next version of its key, fenced by the
// lease l on the run that recorded it. Returns INVALID_ARGUMENT,
// LEASE_LOST.
func (d *DB) CreateBaseline(ctx context.Context, l duet.Lease, b *duet.Baseline) error {
	if err := storerules.CheckBaseline(l, b); err != nil {
		return err
	}
	return d.tx(ctx, func(tx *cachedTx) error {
		if err := held(ctx, tx, l, b.ExecutionID); err != nil {
			return err
		}
		return storerules.InsertBaseline(ctx, d.engineOn(tx), b)
	})
}

// SaveMetrics stores page-speed values under the lease l, replacing those of the same
// execution, step and name.
func (d *DB) SaveMetrics(ctx context.Context, l duet.Lease, ms []*duet.Metric) error {
	if len(ms) == 0 {
		return nil
	}
	return d.tx(ctx, func(tx *cachedTx) error {
		return storerules.SaveMetrics(ctx, d.engineOn(tx), l, ms, func(id string) error { return held(ctx, tx, l, id) })
	})
}
