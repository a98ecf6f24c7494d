package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// DeviceLeaseOpener returns a new, empty device lease store whose clock the
// test moves with advance; it registers its own cleanup.
type DeviceLeaseOpener func(t *testing.T) (s duet.DeviceLeaseStore, advance func(time.Duration))

// RunDeviceLeases runs the device lease suite against stores made by open.
func RunDeviceLeases(t *testing.T, open DeviceLeaseOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, duet.DeviceLeaseStore, func(time.Duration))
	}{
		{"OneHolder", testDeviceOneHolder},
		{"Expiry", testDeviceExpiry},
		{"Renew", testDeviceRenew},
		{"Concurrent", testDeviceConcurrent},
		{"Invalid", testDeviceInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, advance := open(t)
			tt.fn(t, s, advance)
		})
	}
}

const phone = "android:R58M1234ABC"

func acquire(t *testing.T, s duet.DeviceLeaseStore, device, holder string, ttl time.Duration) error {
	t.Helper()
	return s.AcquireDevice(ctx(t), &duet.DeviceLease{Device: device, Holder: holder, Owner: "host pid " + holder}, ttl)
}

func leases(t *testing.T, s duet.DeviceLeaseStore) string {
	t.Helper()
	ls, err := s.FindDeviceLeases(ctx(t))
	if err != nil {
		t.Fatalf("FindDeviceLeases: %v", err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Device+"="+l.Holder)
	}
	return strings.Join(out, ",")
}

func testDeviceOneHolder(t *testing.T, s duet.DeviceLeaseStore, _ func(time.Duration)) {
	l := &duet.DeviceLease{Device: phone, Holder: "h1", Owner: "worker-a pid 1"}
	if err := s.AcquireDevice(ctx(t), l, time.Minute); err != nil {
		t.Fatalf("AcquireDevice of a free device: %v", err)
	}
	if l.AcquiredAt.IsZero() || !l.ExpiresAt.After(l.AcquiredAt) {
		t.Errorf("the lease's times: acquired %v, expires %v; want both set, expiry later", l.AcquiredAt, l.ExpiresAt)
	}
	err := acquire(t, s, phone, "h2", time.Minute)
	wantCode(t, err, duet.CodeConflict)
	if !strings.Contains(duet.ErrorMessage(err), "worker-a pid 1") {
		t.Errorf("the conflict: got %q, want it to name the owner", duet.ErrorMessage(err))
	}
	if err := acquire(t, s, phone, "h1", time.Minute); err != nil {
		t.Errorf("AcquireDevice again by its holder: %v", err)
	}
	if err := acquire(t, s, "android:other", "h2", time.Minute); err != nil {
		t.Errorf("another device is free: %v", err)
	}
	if got := leases(t, s); got != "android:R58M1234ABC=h1,android:other=h2" {
		t.Errorf("leases: got %s", got)
	}
	// Releasing someone else's lease does nothing.
	if err := s.ReleaseDevice(ctx(t), phone, "h2"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, acquire(t, s, phone, "h2", time.Minute), duet.CodeConflict)
	if err := s.ReleaseDevice(ctx(t), phone, "h1"); err != nil {
		t.Fatal(err)
	}
	if err := s.ReleaseDevice(ctx(t), phone, "h1"); err != nil {
		t.Errorf("releasing twice: %v", err)
	}
	if err := acquire(t, s, phone, "h2", time.Minute); err != nil {
		t.Errorf("AcquireDevice after the release: %v", err)
	}
	wantCode(t, s.RenewDevice(ctx(t), phone, "h1", time.Minute), duet.CodeConflict)
}

func testDeviceExpiry(t *testing.T, s duet.DeviceLeaseStore, advance func(time.Duration)) {
	if err := acquire(t, s, phone, "crashed", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	advance(29 * time.Second)
	wantCode(t, acquire(t, s, phone, "next", time.Minute), duet.CodeConflict)
	advance(2 * time.Second)
	if got := leases(t, s); got != "" {
		t.Errorf("leases after the expiry: got %s, want none", got)
	}
	if err := acquire(t, s, phone, "next", time.Minute); err != nil {
		t.Fatalf("AcquireDevice of an expired lease: %v", err)
	}
	wantCode(t, s.RenewDevice(ctx(t), phone, "crashed", time.Minute), duet.CodeConflict)
	// The late holder's release must not free the new holder's device.
	if err := s.ReleaseDevice(ctx(t), phone, "crashed"); err != nil {
		t.Fatal(err)
	}
	if got := leases(t, s); got != phone+"=next" {
		t.Errorf("leases: got %s, want the new holder's", got)
	}
}

func testDeviceRenew(t *testing.T, s duet.DeviceLeaseStore, advance func(time.Duration)) {
	if err := acquire(t, s, phone, "h1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		advance(20 * time.Second)
		if err := s.RenewDevice(ctx(t), phone, "h1", 30*time.Second); err != nil {
			t.Fatalf("RenewDevice: %v", err)
		}
	}
	wantCode(t, acquire(t, s, phone, "h2", time.Minute), duet.CodeConflict)
	// A renewal that comes late, before anyone took the device, keeps it.
	advance(31 * time.Second)
	if err := s.RenewDevice(ctx(t), phone, "h1", 30*time.Second); err != nil {
		t.Fatalf("a late RenewDevice of a lease nobody took: %v", err)
	}
	wantCode(t, acquire(t, s, phone, "h2", time.Minute), duet.CodeConflict)
	advance(31 * time.Second)
	if err := acquire(t, s, phone, "h2", time.Minute); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.RenewDevice(ctx(t), phone, "h1", 30*time.Second), duet.CodeConflict)
}

func testDeviceConcurrent(t *testing.T, s duet.DeviceLeaseStore, _ func(time.Duration)) {
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = acquire(t, s, phone, fmt.Sprint("h", i), time.Minute) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch duet.ErrorCode(err) {
		case "":
			won++
		case duet.CodeConflict:
		default:
			t.Errorf("holder %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent holders got the device, want exactly 1", won, n)
	}
}

func testDeviceInvalid(t *testing.T, s duet.DeviceLeaseStore, _ func(time.Duration)) {
	wantCode(t, acquire(t, s, "", "h", time.Minute), duet.CodeInvalidArgument)
	wantCode(t, acquire(t, s, phone, "", time.Minute), duet.CodeInvalidArgument)
	wantCode(t, acquire(t, s, phone, "h", 0), duet.CodeInvalidArgument)
}
