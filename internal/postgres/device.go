package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/storerules"
)

var _ duet.DeviceLeaseStore = (*DB)(nil)

// AcquireDevice takes the lease of a device for its holder when it is free,
// expired or already theirs. Returns CONFLICT naming the current owner, or
// INVALID_ARGUMENT.
func (d *DB) AcquireDevice(ctx context.Context, l *duet.DeviceLease, ttl time.Duration) error {
	if err := storerules.CheckDeviceLease(l, ttl); err != nil {
		return err
	}
	now := ts(d.now())
	// One statement decides: insert, or take over an expired lease or our
	// own; a live lease of another holder is left as it is (no row back).
	err := d.pool.QueryRow(ctx, `INSERT INTO device_leases AS l (device, holder, owner, acquired_at, expires_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (device) DO UPDATE SET holder = excluded.holder, owner = excluded.owner,
			acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE excluded.acquired_at END,
			expires_at = excluded.expires_at
		WHERE l.holder = excluded.holder OR l.expires_at <= $4
		RETURNING acquired_at, expires_at`,
		l.Device, l.Holder, l.Owner, now, now.Add(ttl)).Scan(&l.AcquiredAt, &l.ExpiresAt)
	if err == nil {
		l.AcquiredAt, l.ExpiresAt = utc(l.AcquiredAt), utc(l.ExpiresAt)
		return nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return mapErr(err)
	}
	var owner string
	var expires time.Time
	if err := d.pool.QueryRow(ctx, `SELECT owner, expires_at FROM device_leases WHERE device = $1`, l.Device).Scan(&owner, &expires); err != nil {
		if errors.Is(err, pgx.ErrNoRows) { // released in between: try again
			return d.AcquireDevice(ctx, l, ttl)
		}
		return mapErr(err)
	}
	if owner == "" {
		owner = "another execution"
	}
	return duet.Errorf(duet.CodeConflict, "device %s is in use by %s (lease until %s)", l.Device, owner, utc(expires).Format(time.RFC3339))
}

// RenewDevice extends the holder's lease; a lease that expired is renewed
// too while nobody else took the device. Returns CONFLICT when the holder no
// longer holds it.
func (d *DB) RenewDevice(ctx context.Context, device, holder string, ttl time.Duration) error {
	tag, err := d.pool.Exec(ctx, `UPDATE device_leases SET expires_at = $1 WHERE device = $2 AND holder = $3`,
		ts(d.now().Add(ttl)), device, holder)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() != 1 {
		return duet.Errorf(duet.CodeConflict, "the lease of device %s was lost", device)
	}
	return nil
}

// ReleaseDevice frees the device if the holder holds it.
func (d *DB) ReleaseDevice(ctx context.Context, device, holder string) error {
	_, err := d.pool.Exec(ctx, `DELETE FROM device_leases WHERE device = $1 AND holder = $2`, device, holder)
	return mapErr(err)
}

// FindDeviceLeases returns the unexpired leases, by device.
func (d *DB) FindDeviceLeases(ctx context.Context) ([]*duet.DeviceLease, error) {
	rows, err := d.pool.Query(ctx, `SELECT device, holder, owner, acquired_at, expires_at FROM device_leases WHERE expires_at > $1 ORDER BY device`, ts(d.now()))
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, func(r rowScanner) (*duet.DeviceLease, error) {
		var l duet.DeviceLease
		if err := r.Scan(&l.Device, &l.Holder, &l.Owner, &l.AcquiredAt, &l.ExpiresAt); err != nil {
			return nil, err
		}
		l.AcquiredAt, l.ExpiresAt = utc(l.AcquiredAt), utc(l.ExpiresAt)
		return &l, nil
	})
}
