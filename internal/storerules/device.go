package storerules

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/duet-test/duet"
)

// Devices is duet.DeviceLeaseStore on an engine.
type Devices struct{ E Engine }

// AcquireDevice takes the lease of a device for its holder when it is free,
// expired or already theirs. Returns CONFLICT naming the current owner, or
// INVALID_ARGUMENT.
func (s Devices) AcquireDevice(ctx context.Context, l *duet.DeviceLease, ttl time.Duration) error {
	if err := CheckDeviceLease(l, ttl); err != nil {
		return err
	}
	for {
		now := s.E.Now()
		// One statement decides: insert, or take over an expired lease or
		// our own; a live lease of another holder is left as it is (no row
		// back).
		err := s.E.Write(ctx, []any{TimeOf(&l.AcquiredAt), TimeOf(&l.ExpiresAt)}, `INSERT INTO device_leases AS l (device, holder, owner, acquired_at, expires_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (device) DO UPDATE SET holder = excluded.holder, owner = excluded.owner,
				acquired_at = CASE WHEN l.holder = excluded.holder THEN l.acquired_at ELSE excluded.acquired_at END,
				expires_at = excluded.expires_at
			WHERE l.holder = excluded.holder OR l.expires_at <= $4
			RETURNING acquired_at, expires_at`,
			l.Device, l.Holder, l.Owner, s.E.Stored(now), s.E.Stored(now.Add(ttl)))
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var owner string
		var expires time.Time
		err = s.E.Read(ctx, []any{&owner, TimeOf(&expires)}, `SELECT owner, expires_at FROM device_leases WHERE device = $1`, l.Device)
		if errors.Is(err, sql.ErrNoRows) { // released in between: try again
			continue
		} else if err != nil {
			return err
		}
		if owner == "" {
			owner = "another execution"
		}
		return duet.Errorf(duet.CodeConflict, "device %s is in use by %s (lease until %s)", l.Device, owner, expires.Format(time.RFC3339))
	}
}

// RenewDevice extends the holder's lease; a lease that expired is renewed
// too while nobody else took the device. Returns CONFLICT when the holder no
// longer holds it.
func (s Devices) RenewDevice(ctx context.Context, device, holder string, ttl time.Duration) error {
	n, err := s.E.Exec(ctx, `UPDATE device_leases SET expires_at = $1 WHERE device = $2 AND holder = $3`, s.E.Stored(s.E.Now().Add(ttl)), device, holder)
	if err == nil && n != 1 {
		return duet.Errorf(duet.CodeConflict, "the lease of device %s was lost", device)
	}
	return err
}

// ReleaseDevice frees the device if the holder holds it.
func (s Devices) ReleaseDevice(ctx context.Context, device, holder string) error {
	_, err := s.E.Exec(ctx, `DELETE FROM device_leases WHERE device = $1 AND holder = $2`, device, holder)
	return err
}

// FindDeviceLeases returns the unexpired leases, by device.
func (s Devices) FindDeviceLeases(ctx context.Context) ([]*duet.DeviceLease, error) {
	return All(ctx, s.E, func(r Row) (*duet.DeviceLease, error) {
		var l duet.DeviceLease
		return scanned(&l, r.Scan(&l.Device, &l.Holder, &l.Owner, TimeOf(&l.AcquiredAt), TimeOf(&l.ExpiresAt)))
	}, `SELECT device, holder, owner, acquired_at, expires_at FROM device_leases WHERE expires_at > $1 ORDER BY device`, s.E.Stored(s.E.Now()))
}
