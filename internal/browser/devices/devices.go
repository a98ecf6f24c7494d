// Package devices routes a run's device to the browser driver that serves
// it: the default pool (local Chromium, or DUET_BROWSER_URL), a remote
// browser a task or run names, or Chrome on an Android phone
// (docs/devices.md). It sits beside the drivers (internal/browser and
// internal/browser/android), which it chooses between.
package devices

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/android"
	"github.com/duet-test/duet/internal/netguard"
)

// Device is a parsed device name of a task or a run:
//
//	""                       the default browser, desktop preset
//	pixel-7                  a preset on the default browser (local Chromium, or DUET_BROWSER_URL)
//	pixel-7@ws://HOST:PORT   a preset on the remote browser at that address ("@URL" alone: desktop)
//	ws://HOST:PORT           the same as "@ws://HOST:PORT"
//	android:SERIAL           Chrome on that phone (android:any: any free phone)
type Device struct {
	Preset  string // "" means desktop
	Browser string // a DevTools endpoint; "" means the default browser
	Android string // a serial or "any"; "" means not a phone
}

// Parse parses a device name. It returns INVALID_ARGUMENT naming what is
// wrong: an unknown preset (listing the valid ones), a malformed phone name
// or browser address, or a browser address with credentials or a query (a
// token belongs in DUET_BROWSER_URL, not in a task).
func Parse(name string) (Device, error) {
	name = strings.TrimSpace(name)
	if strings.HasPrefix(name, android.Prefix) {
		serial, err := android.ParseTarget(name)
		return Device{Android: serial}, err
	}
	var d Device
	preset, endpoint, hasAt := strings.Cut(name, "@")
	switch {
	case hasAt:
		d.Preset, d.Browser = preset, endpoint
	case strings.Contains(name, "://"):
		d.Browser = name
	default:
		d.Preset = name
	}
	if d.Browser != "" || hasAt {
		u, err := browser.ParseRemoteURL(d.Browser, true)
		if err != nil {
			return Device{}, err
		}
		d.Browser = u.String()
	}
	if _, err := browser.DeviceByName(d.Preset); err != nil {
		return Device{}, err
	}
	return d, nil
}

// Valid checks a device name ("" is the default): a preset, a preset on a
// remote browser, or a phone. It returns INVALID_ARGUMENT naming the valid
// presets or what is wrong.
func Valid(name string) error {
	_, err := Parse(name)
	return err
}

// maxRemotes caps the remote browsers that tasks and runs name, each with a
// connection of its own.
const maxRemotes = 8

// Router sends each session to the browser its device name asks for — the
// default pool, a remote browser a task or run names, or a phone. It is
// safe for concurrent use.
type Router struct {
	Default *browser.Pool   // presets; local Chromium or DUET_BROWSER_URL
	Android *android.Driver // android:SERIAL; nil: phones are unavailable
	// Guard checks the addresses of the remote browsers that tasks and runs
	// name, and their sessions' navigations; nil checks nothing.
	Guard  *netguard.Policy
	Logger *slog.Logger

	mu      sync.Mutex
	remotes map[string]*browser.Pool
	closed  bool
}

// Session opens a session on the browser of device and returns it with
// the function that ends it (and frees its phone, for a phone); allow is
// what the network guard lets its navigations find on loopback or private
// addresses (the task's base URL). Returns
// INVALID_ARGUMENT for a device name Parse refuses, BROWSER_UNAVAILABLE
// when its driver is not available, and the driver's errors.
func (r *Router) Session(ctx context.Context, device string, allow netguard.Allowance) (*browser.Session, func(), error) {
	d, err := Parse(device)
	if err != nil {
		return nil, nil, err
	}
	if d.Android != "" {
		if r.Android == nil {
			return nil, nil, duet.Errorf(duet.CodeBrowserUnavailable, "Android phones are not available in this process")
		}
		s, err := r.Android.NewSession(ctx, android.Prefix+d.Android, allow)
		if err != nil {
			return nil, nil, err
		}
		return s.Session, s.Close, nil
	}
	preset, err := browser.DeviceByName(d.Preset)
	if err != nil {
		return nil, nil, err
	}
	pool := r.Default
	if d.Browser != "" {
		if pool, err = r.remote(d.Browser); err != nil {
			return nil, nil, err
		}
	}
	s, err := pool.NewSession(ctx, preset, allow)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

// remote returns the pool of the remote browser at endpoint, connecting on
// first use. When maxRemotes are in use, an idle one makes room.
func (r *Router) remote(endpoint string) (*browser.Pool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "the browsers are closed")
	}
	if p, ok := r.remotes[endpoint]; ok {
		return p, nil
	}
	if r.remotes == nil {
		r.remotes = map[string]*browser.Pool{}
	}
	if len(r.remotes) >= maxRemotes {
		for k, p := range r.remotes {
			if st := p.Stats(); st.Sessions == 0 && st.Waiting == 0 {
				delete(r.remotes, k)
				go p.Close()
				break
			}
		}
	}
	if len(r.remotes) >= maxRemotes {
		return nil, duet.Errorf(duet.CodeBrowserUnavailable, "%d remote browsers are in use; the browser of this run has to wait for a free one", maxRemotes)
	}
	p := browser.NewPool(browser.Options{
		Remote: &browser.Remote{URL: endpoint, Guard: r.Guard},
		Guard:  r.Guard, MaxBrowsers: 1, Logger: r.Logger,
	})
	r.remotes[endpoint] = p
	return p, nil
}

// Close closes the connections to the remote browsers that tasks and runs
// named (not the default pool, nor the phones' driver, which their owner
// closes).
func (r *Router) Close() {
	r.mu.Lock()
	r.closed = true
	pools := r.remotes
	r.remotes = nil
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Go(p.Close)
	}
	wg.Wait()
}
