package sqlite

import (
	"context"
	"database/sql"
	"time"

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
	now := d.now()
	return d.tx(ctx, func(tx *sql.Tx) error {
		// One statement decides: insert, or take over an expired lease or
		// our own; a live lease of another holder is left as it is.
		res, err := tx.ExecContext(ctx, `INSERT INTO device_leases (device, holder, owner, acquired_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT (device) DO UPDATE SET holder = excluded.holder, owner = excluded.owner,
				acquired_at = CASE WHEN device_leases.holder = excluded.holder THEN device_leases.acquired_at ELSE excluded.acquired_at END,
				expires_at = excluded.expires_at
			WHERE device_leases.holder = excluded.holder OR device_leases.expires_at <= ?4`,
			l.Device, l.Holder, l.Owner, micros(now), micros(now.Add(ttl)))
		if err != nil {
			return mapErr(err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			var acquired, expires int64
			if err := tx.QueryRowContext(ctx, `SELECT acquired_at, expires_at FROM device_leases WHERE device = ?`, l.Device).Scan(&acquired, &expires); err != nil {
				return mapErr(err)
			}
			l.AcquiredAt, l.ExpiresAt = fromMicros(acquired), fromMicros(expires)
			return nil
		}
		var owner string
		var expires int64
		err = tx.QueryRowContext(ctx, `SELECT owner, expires_at FROM device_leases WHERE device = ?`, l.Device).Scan(&owner, &expires)
		if err != nil {
			return mapErr(err)
		}
		if owner == "" {
			owner = "another execution"
		}
		return duet.Errorf(duet.CodeConflict, "device %s is in use by %s (lease until %s)", l.Device, owner, fromMicros(expires).Format(time.RFC3339))
	})
}

// RenewDevice extends the holder's lease; a lease that expired is renewed
// too while nobody else took the device. Returns CONFLICT when the holder no
// longer holds it.
func (d *DB) RenewDevice(ctx context.Context, device, holder string, ttl time.Duration) error {
	res, err := d.q.ExecContext(ctx, `UPDATE device_leases SET expires_at = ? WHERE device = ? AND holder = ?`,
		micros(d.now().Add(ttl)), device, holder)
	if err != nil {
		return mapErr(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return duet.Errorf(duet.CodeConflict, "the lease of device %s was lost", device)
	}
	return nil
}

// ReleaseDevice frees the device if the holder holds it.
func (d *DB) ReleaseDevice(ctx context.Context, device, holder string) error {
	_, err := d.q.ExecContext(ctx, `DELETE FROM device_leases WHERE device = ? AND holder = ?`, device, holder)
	return mapErr(err)
}

// FindDeviceLeases returns the unexpired leases, by device.
func (d *DB) FindDeviceLeases(ctx context.Context) ([]*duet.DeviceLease, error) {
	rows, err := d.q.QueryContext(ctx, `SELECT device, holder, owner, acquired_at, expires_at FROM device_leases WHERE expires_at > ? ORDER BY device`, micros(d.now()))
	if err != nil {
		return nil, mapErr(err)
	}
	return collect(rows, func(r rowScanner) (*duet.DeviceLease, error) {
		var l duet.DeviceLease
		var acquired, expires int64
		if err := r.Scan(&l.Device, &l.Holder, &l.Owner, &acquired, &expires); err != nil {
			return nil, err
		}
		l.AcquiredAt, l.ExpiresAt = fromMicros(acquired), fromMicros(expires)
		return &l, nil
	})
}
