package duet

import (
	"context"
	"time"
)

// DeviceLease says that one execution holds a device — a phone such as
// "android:R58M1234ABC" — until ExpiresAt. A device is held by one execution
// at a time across every process on the same store; the holder renews the
// lease while it uses the device, so a lease that is not renewed (its worker
// crashed) frees the device when it expires.
type DeviceLease struct {
	Device     string    `json:"device"`     // e.g. "android:R58M1234ABC"
	Holder     string    `json:"holder"`     // opaque id of the session that holds it
	Owner      string    `json:"owner"`      // who holds it, for people: "host pid 1234"
	AcquiredAt time.Time `json:"acquiredAt"` // set by the store
	ExpiresAt  time.Time `json:"expiresAt"`  // set by the store: now + ttl
}

// DeviceLeaseStore keeps device leases.
type DeviceLeaseStore interface {
	// AcquireDevice gives lease.Device to lease.Holder for ttl when the
	// device is free, its lease has expired, or lease.Holder already holds
	// it; it sets lease.AcquiredAt and lease.ExpiresAt. Returns CONFLICT,
	// naming the current owner, when another holder has it, and
	// INVALID_ARGUMENT for an empty device or holder or a ttl <= 0.
	AcquireDevice(ctx context.Context, lease *DeviceLease, ttl time.Duration) error
	// RenewDevice extends holder's lease of device to now + ttl, also when
	// it expired but nobody took the device since. Returns CONFLICT when
	// holder no longer holds it (released, or expired and taken by another).
	RenewDevice(ctx context.Context, device, holder string, ttl time.Duration) error
	// ReleaseDevice frees device if holder holds it; releasing a lease that
	// is not held is not an error.
	ReleaseDevice(ctx context.Context, device, holder string) error
	// FindDeviceLeases returns the unexpired leases, by device.
	FindDeviceLeases(ctx context.Context) ([]*DeviceLease, error)
}
