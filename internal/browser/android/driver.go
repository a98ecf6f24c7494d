package android

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/netguard"
)

// Prefix starts the device names of phones: "android:SERIAL", "android:any".
const Prefix = "android:"

// Any is the serial that asks for any free ready phone.
const Any = "any"

// ParseTarget returns the serial of a device name "android:SERIAL" (Any for
// "android:any"). It returns CodeInvalidArgument for a name that is not of
// that form or a serial with characters adb serials do not have.
func ParseTarget(name string) (string, error) {
	serial, ok := strings.CutPrefix(name, Prefix)
	if !ok || serial == "" {
		return "", duet.Errorf(duet.CodeInvalidArgument, "device %q: want android:SERIAL (see duet device list) or android:any", name)
	}
	for _, r := range serial {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:[]", r)) || len(serial) > 128 {
			return "", duet.Errorf(duet.CodeInvalidArgument, "device %q: a serial has letters, digits and . - _ : only", name)
		}
	}
	return serial, nil
}

// Options configure a Driver. The zero value uses adb from PATH and holds
// phones within this process only.
type Options struct {
	ADB *ADB // nil means &ADB{}
	// Leases holds each phone for one execution at a time across every
	// process on the store; nil holds them within this process only.
	Leases duet.DeviceLeaseStore
	// LeaseTTL is how long a lease lasts without renewal: a crashed
	// process frees its phones after it. Zero means 30 seconds. The lease
	// is renewed every third of it.
	LeaseTTL time.Duration
	// Owner names this process in leases, for people: "HOST pid N". Empty
	// means the host name and process id.
	Owner string
	// Guard is the network guard of the sessions' navigations (see
	// browser.Options.Guard); nil checks nothing.
	Guard *netguard.Policy
	// DefaultTimeout is browser.Options.DefaultTimeout.
	DefaultTimeout time.Duration
	// ChromeStart bounds the wait for Chrome's DevTools socket after the
	// driver starts Chrome; zero means 15 seconds.
	ChromeStart time.Duration
	Logger      *slog.Logger
}

// Driver opens browser sessions on the phones adb sees. It is safe for
// concurrent use.
type Driver struct {
	opts Options
	adb  *ADB
	log  *slog.Logger
}

// New returns a driver with opts.
func New(opts Options) *Driver {
	if opts.ADB == nil {
		opts.ADB = &ADB{}
	}
	if opts.Leases == nil {
		opts.Leases = newMemLeases()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = 30 * time.Second
	}
	if opts.ChromeStart <= 0 {
		opts.ChromeStart = 15 * time.Second
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = fmt.Sprintf("%s pid %d", host, os.Getpid())
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Driver{opts: opts, adb: opts.ADB, log: opts.Logger}
}

// ADB returns the driver's adb.
func (d *Driver) ADB() *ADB { return d.adb }

// Session is a browser session in a fresh Chrome tab of a phone that this
// execution holds. Close closes the tab, removes the port forward and frees
// the phone.
type Session struct {
	*browser.Session
	Device Device // the phone

	close func()
	once  sync.Once
}

// Close ends the session and frees the phone. It is safe to call more than
// once and from any goroutine.
func (s *Session) Close() { s.once.Do(s.close) }

// NewSession holds a phone — the one of name ("android:SERIAL"), or the
// first free ready one ("android:any") — forwards its Chrome DevTools socket,
// and opens a fresh tab. When the phones it may use are all held, it waits
// for one until ctx ends. allow is what the network guard lets the
// session's navigations find on loopback or private addresses (the task's
// base URL, see browser.Pool.NewSession).
//
// Errors: CodeInvalidArgument for a bad name; CodeBrowserUnavailable when adb
// is missing, no phone is attached, the phone is not ready (unauthorized,
// offline...) or Chrome does not open its DevTools socket, each with what to
// do; CodeTimeout or CodeCancelled when ctx ends while every phone is in
// use; the codes of browser.Pool.NewSession otherwise.
func (d *Driver) NewSession(ctx context.Context, name string, allow netguard.Allowance) (*Session, error) {
	serial, err := ParseTarget(name)
	if err != nil {
		return nil, err
	}
	holder := duet.NewID("lease")
	dev, err := d.hold(ctx, serial, holder)
	if err != nil {
		return nil, err
	}
	hb := d.heartbeat(Prefix+dev.Serial, holder)
	s, err := d.open(ctx, dev, allow)
	if err != nil {
		hb.stop()
		return nil, err
	}
	hb.onLost(s.Session.Close)
	cleanup := s.close
	s.close = func() {
		hb.stop()
		cleanup()
		d.log.Debug("android: device freed", "device", Prefix+dev.Serial)
	}
	return s, nil
}

// lease keeps a device lease alive from when it is taken until stop.
type lease struct {
	stop   func() // ends the renewals and frees the device
	mu     sync.Mutex
	lost   func() // called when another holder took the device
	isLost bool
}

func (l *lease) onLost(f func()) {
	l.mu.Lock()
	l.lost = f
	lost := l.isLost
	l.mu.Unlock()
	if lost {
		f()
	}
}

// heartbeat renews the lease of device every third of its time until stop,
// which releases it. When another holder has taken the device (this process
// stalled past the lease), it calls the lost function.
func (d *Driver) heartbeat(device, holder string) *lease {
	l := &lease{}
	hctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d.opts.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(hctx, d.opts.LeaseTTL/2)
			err := d.opts.Leases.RenewDevice(rctx, device, holder, d.opts.LeaseTTL)
			rcancel()
			if duet.ErrorCode(err) == duet.CodeConflict {
				d.log.Error("android: another execution took the device; closing this session", "device", device)
				l.mu.Lock()
				l.isLost = true
				f := l.lost
				l.mu.Unlock()
				if f != nil {
					f()
				}
				return
			}
			if err != nil && hctx.Err() == nil {
				d.log.Warn("android: cannot renew a device lease", "device", device, "err", err)
			}
		}
	})
	l.stop = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer rcancel()
		if err := d.opts.Leases.ReleaseDevice(rctx, device, holder); err != nil {
			d.log.Warn("android: cannot release a device lease; it expires by itself", "device", device, "err", err)
		}
	})
	return l
}

// hold takes the lease of a ready phone that name allows, waiting while all
// are held.
func (d *Driver) hold(ctx context.Context, serial, holder string) (Device, error) {
	delay := 200 * time.Millisecond
	var busy []string // who held the phones at the last look
	waited := func() (Device, error) {
		code := duet.CodeTimeout
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code = duet.CodeCancelled
		}
		return Device{}, duet.WrapError(code, ctx.Err(), "waited for a free phone, but all are in use: %s", strings.Join(busy, "; "))
	}
	for {
		devs, err := d.adb.list(ctx)
		if err != nil {
			if ctx.Err() != nil && len(busy) > 0 {
				// The wait ended during a look at the phones: say who
				// held them, not that adb was slow.
				return waited()
			}
			return Device{}, d.ctxErr(ctx, err)
		}
		cands, err := candidates(devs, serial)
		if err != nil {
			return Device{}, err
		}
		busy = busy[:0]
		for _, dev := range cands {
			l := &duet.DeviceLease{Device: Prefix + dev.Serial, Holder: holder, Owner: d.opts.Owner}
			err := d.opts.Leases.AcquireDevice(ctx, l, d.opts.LeaseTTL)
			if err == nil {
				d.adb.props(ctx, &dev)
				return dev, nil
			}
			if duet.ErrorCode(err) != duet.CodeConflict {
				if ctx.Err() != nil && len(busy) > 0 {
					return waited()
				}
				return Device{}, d.ctxErr(ctx, err)
			}
			busy = append(busy, duet.ErrorMessage(err))
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return waited()
		case <-t.C:
		}
		delay = min(2*delay, 2*time.Second)
	}
}

func (d *Driver) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return duet.WrapError(duet.CodeTimeout, err, "timed out waiting for adb")
	}
	return duet.WrapError(duet.CodeCancelled, err, "cancelled while waiting for adb")
}

// candidates returns the ready phones that serial allows, or an actionable
// error.
func candidates(devs []Device, serial string) ([]Device, error) {
	const connect = "connect a phone by USB with USB debugging on (Settings > Developer options), accept its prompt, and check it with `duet device list`"
	if len(devs) == 0 {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "no Android device is attached (adb devices -l lists none): %s", connect)
	}
	var ready, other []Device
	for _, d := range devs {
		if serial != Any && d.Serial != serial {
			continue
		}
		if d.Ready() {
			ready = append(ready, d)
		} else {
			other = append(other, d)
		}
	}
	if len(ready) > 0 {
		return ready, nil
	}
	if len(other) > 0 {
		var why []string
		for _, d := range other {
			why = append(why, d.Serial+": "+d.Problem())
		}
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "no Android device is ready: %s", strings.Join(why, "; "))
	}
	var serials []string
	for _, d := range devs {
		serials = append(serials, d.Serial)
	}
	return nil, duet.Errorf(duet.CodeBrowserUnavailable, "Android device %s is not attached (adb lists %s): %s", serial, strings.Join(serials, ", "), connect)
}

// open forwards the phone's DevTools socket, attaches and opens a tab. The
// session's close function closes the tab and removes the forward.
func (d *Driver) open(ctx context.Context, dev Device, allow netguard.Allowance) (*Session, error) {
	port, err := d.adb.Forward(ctx, dev.Serial)
	if err != nil {
		if notFound(err) {
			return nil, duet.WrapError(duet.CodeDeviceLost, err, "%s disconnected", dev.Name())
		}
		return nil, duet.WrapError(duet.CodeBrowserUnavailable, err, "cannot forward the DevTools socket of %s: %v", dev.Name(), err)
	}
	unforward := func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.adb.Unforward(uctx, dev.Serial, port); err != nil {
			d.log.Debug("android: cannot remove a port forward (the device may be gone)", "device", dev.Serial, "port", port, "err", err)
		}
	}
	pool := browser.NewPool(browser.Options{
		Remote: &browser.Remote{
			URL:           "http://127.0.0.1:" + strconv.Itoa(port),
			Name:          dev.Name(),
			Real:          true,
			SharedContext: true,
		},
		MaxBrowsers: 1, MaxContextsPerBrowser: 1,
		Guard: d.opts.Guard, DefaultTimeout: d.opts.DefaultTimeout, Logger: d.log,
	})
	bs, err := d.attach(ctx, pool, dev, allow)
	if err != nil {
		pool.Close()
		unforward()
		return nil, err
	}
	s := &Session{Session: bs, Device: dev}
	s.close = func() {
		bs.Close()
		pool.Close()
		unforward()
	}
	return s, nil
}

// attach opens a tab; when Chrome is not running (nothing answers on the
// forwarded socket), it starts Chrome and tries again for a while.
func (d *Driver) attach(ctx context.Context, pool *browser.Pool, dev Device, allow netguard.Allowance) (*browser.Session, error) {
	s, err := pool.NewSession(ctx, browser.Device{}, allow)
	if err == nil || duet.ErrorCode(err) != duet.CodeBrowserUnavailable {
		return s, err
	}
	d.log.Info("android: starting Chrome on the device", "device", dev.Serial, "err", err)
	if err := d.adb.StartChrome(ctx, dev.Serial); err != nil {
		return nil, duet.WrapError(duet.CodeBrowserUnavailable, err, "Chrome's DevTools socket on %s does not answer, and Chrome cannot be started: %v", dev.Name(), err)
	}
	deadline := time.Now().Add(d.opts.ChromeStart)
	for {
		s, err = pool.NewSession(ctx, browser.Device{}, allow)
		if err == nil || duet.ErrorCode(err) != duet.CodeBrowserUnavailable || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if duet.ErrorCode(err) == duet.CodeBrowserUnavailable {
		return nil, duet.WrapError(duet.CodeBrowserUnavailable, err,
			"Chrome on %s does not accept DevTools connections: open Chrome on the phone once, and check that USB debugging is on", dev.Name())
	}
	return s, err
}

// memLeases holds device leases within one process.
type memLeases struct {
	mu     sync.Mutex
	leases map[string]duet.DeviceLease
}

func newMemLeases() *memLeases { return &memLeases{leases: map[string]duet.DeviceLease{}} }

func (m *memLeases) AcquireDevice(_ context.Context, l *duet.DeviceLease, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if cur, ok := m.leases[l.Device]; ok && cur.Holder != l.Holder && cur.ExpiresAt.After(now) {
		return duet.Errorf(duet.CodeConflict, "device %s is in use by %s", l.Device, cur.Owner)
	}
	l.AcquiredAt, l.ExpiresAt = now, now.Add(ttl)
	m.leases[l.Device] = *l
	return nil
}

func (m *memLeases) RenewDevice(_ context.Context, device, holder string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.leases[device]
	if !ok || cur.Holder != holder {
		return duet.Errorf(duet.CodeConflict, "the lease of device %s was lost", device)
	}
	cur.ExpiresAt = time.Now().Add(ttl)
	m.leases[device] = cur
	return nil
}

func (m *memLeases) ReleaseDevice(_ context.Context, device, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.leases[device]; ok && cur.Holder == holder {
		delete(m.leases, device)
	}
	return nil
}

func (m *memLeases) FindDeviceLeases(context.Context) ([]*duet.DeviceLease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*duet.DeviceLease
	for _, l := range m.leases {
		if l.ExpiresAt.After(time.Now()) {
			c := l
			out = append(out, &c)
		}
	}
	return out, nil
}
