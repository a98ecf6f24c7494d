package android

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/netguard"
	"github.com/duet-test/duet/internal/sqlite"
)

// phone is the stand-in of one phone for the driver: adb's answers recorded
// from a Pixel 7, and a Chromium started separately in place of the phone's
// Chrome, reached through a TCP proxy per `adb forward` as the phone's
// DevTools socket is. Killing the proxies is unplugging the phone.
type phone struct {
	*recorder
	serial string

	mu      sync.Mutex
	proxies map[int]*chromiumtest.Proxy // by forwarded port
	removed []int
}

const pixelLine = "R58M1234ABC            device usb:1-4 product:panther model:Pixel_7 device:panther transport_id:1\n"

func newPhone(t *testing.T, chrome *chromiumtest.Browser) *phone {
	t.Helper()
	props := readFile(t, "getprop-pixel7.txt")
	p := &phone{serial: "R58M1234ABC", proxies: map[int]*chromiumtest.Proxy{}}
	p.recorder = &recorder{reply: func(args []string) ([]byte, error) {
		switch {
		case args[0] == "devices":
			return []byte("List of devices attached\n" + pixelLine + "\n"), nil
		case len(args) > 3 && args[2] == "shell" && args[3] == "getprop":
			return props, nil
		case len(args) > 4 && args[2] == "forward" && args[3] == "tcp:0" && args[4] == DevToolsSocket:
			px := chromiumtest.NewProxy(t, chrome.Addr)
			port := px.Port()
			p.mu.Lock()
			p.proxies[port] = px
			p.mu.Unlock()
			return fmt.Appendf(nil, "%d\n", port), nil
		case len(args) > 4 && args[2] == "forward" && args[3] == "--remove":
			var port int
			fmt.Sscanf(args[4], "tcp:%d", &port)
			p.mu.Lock()
			defer p.mu.Unlock()
			px, ok := p.proxies[port]
			if !ok {
				return nil, &Error{Args: args, Msg: "adb: error: listener '" + args[4] + "' not found"}
			}
			px.Kill()
			delete(p.proxies, port)
			p.removed = append(p.removed, port)
			return nil, nil
		}
		return nil, fmt.Errorf("unexpected adb %s", strings.Join(args, " "))
	}}
	return p
}

// unplug cuts every forwarded connection, as pulling the cable does.
func (p *phone) unplug() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, px := range p.proxies {
		px.Kill()
	}
}

func (p *phone) forwards() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.proxies)
}

func startChromium(t *testing.T) *chromiumtest.Browser {
	return chromiumtest.Start(t, func(dir string) []string { return browser.CommandLine(dir, 0) })
}

func openDB(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func site(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><meta name="viewport" content="width=device-width"><title>Shop</title><p id="status">paid</p>`)
	}))
	t.Cleanup(s.Close)
	return s
}

func leaseOwners(t *testing.T, db duet.DeviceLeaseStore) []string {
	ls, err := db.FindDeviceLeases(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Device+" by "+l.Owner)
	}
	return out
}

// TestDriver drives the stand-in phone end to end: a session holds the
// phone across "processes" (two drivers on one store), keeps it past its
// lease's time, fails with DEVICE_LOST when the phone goes away, and frees
// the phone and its forward when it closes.
func TestDriver(t *testing.T) {
	t.Parallel()
	chrome := startChromium(t)
	ph := newPhone(t, chrome)
	db := openDB(t)
	web := site(t)
	newDriver := func(owner string) *Driver {
		return New(Options{ADB: &ADB{Run: ph.run}, Leases: db, Owner: owner, LeaseTTL: 2 * time.Second,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	}
	a, b := newDriver("worker-a pid 1"), newDriver("worker-b pid 2")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	s, err := a.NewSession(ctx, "android:R58M1234ABC", netguard.Allowance{})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	t.Cleanup(s.Close)
	if s.Device.Model != "Pixel 7" || s.Device.Android != "14" || s.Session.Device().Name != "Android device R58M1234ABC (Pixel 7)" {
		t.Errorf("the phone: got %+v, session device %+v", s.Device, s.Session.Device())
	}
	if err := s.Open(ctx, web.URL+"/order"); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got, err := s.Text(ctx, "#status"); err != nil || got != "paid" {
		t.Errorf("Text: got %q, %v", got, err)
	}
	if png, err := s.Screenshot(ctx); err != nil || len(png) < 100 {
		t.Errorf("Screenshot from the phone: %d bytes, %v", len(png), err)
	}
	if got := leaseOwners(t, db); !slices.Equal(got, []string{"android:R58M1234ABC by worker-a pid 1"}) {
		t.Errorf("leases: got %v", got)
	}

	// Longer than the lease's time: the heartbeat keeps the phone, so the
	// other process waits, for the serial as for android:any.
	time.Sleep(3 * time.Second)
	for _, name := range []string{"android:R58M1234ABC", "android:any"} {
		wctx, wcancel := context.WithTimeout(ctx, 4*time.Second) // a loaded machine may take a second for adb
		stray, err := b.NewSession(wctx, name, netguard.Allowance{})
		wcancel()
		if err == nil {
			stray.Close()
		}
		if duet.ErrorCode(err) != duet.CodeTimeout || !strings.Contains(duet.ErrorMessage(err), "worker-a pid 1") {
			t.Errorf("%s while the phone is held: got %v, want TIMEOUT naming the holder", name, err)
		}
	}

	ph.unplug()
	_, err = s.Text(ctx, "#status")
	if duet.ErrorCode(err) != duet.CodeDeviceLost || !strings.Contains(duet.ErrorMessage(err), "Android device R58M1234ABC (Pixel 7)") {
		t.Errorf("a call after the phone went away: got %v, want DEVICE_LOST naming the phone", err)
	}
	s.Close()
	if got := leaseOwners(t, db); len(got) != 0 {
		t.Errorf("leases after Close: got %v, want none", got)
	}
	if n := ph.forwards(); n != 0 {
		t.Errorf("%d forwards left after Close, want none", n)
	}

	// The phone is back: the other process gets it at once.
	s2, err := b.NewSession(ctx, "android:any", netguard.Allowance{})
	if err != nil {
		t.Fatalf("NewSession after the release: %v", err)
	}
	if err := s2.Open(ctx, web.URL); err != nil {
		t.Errorf("Open: %v", err)
	}
	s2.Close()
	want := []string{
		"devices -l",
		"-s R58M1234ABC shell getprop",
		"-s R58M1234ABC forward tcp:0 localabstract:chrome_devtools_remote",
	}
	if got := ph.log(); !slices.Equal(got[:3], want) || !slices.ContainsFunc(got, func(c string) bool { return strings.HasPrefix(c, "-s R58M1234ABC forward --remove tcp:") }) {
		t.Errorf("adb commands: got %v", got)
	}
}

// TestDriverCrashedHolder: a phone whose holder crashed (its lease is no
// longer renewed) is free again once the lease expires.
func TestDriverCrashedHolder(t *testing.T) {
	t.Parallel()
	chrome := startChromium(t)
	ph := newPhone(t, chrome)
	db := openDB(t)
	crashed := &duet.DeviceLease{Device: "android:R58M1234ABC", Holder: "lease_crashed", Owner: "worker-x pid 9"}
	if err := db.AcquireDevice(t.Context(), crashed, 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	d := New(Options{ADB: &ADB{Run: ph.run}, Leases: db, Owner: "worker-a pid 1"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	s, err := d.NewSession(ctx, "android:any", netguard.Allowance{})
	if err != nil {
		t.Fatalf("NewSession after the crashed holder's lease expired: %v", err)
	}
	s.Close()
	if took := time.Since(start); took < time.Second {
		t.Errorf("got the phone after %s, before the crashed holder's lease expired", took)
	}
}

// TestDriverErrors: a phone that is not attached, or not ready, says what to
// do.
func TestDriverErrors(t *testing.T) {
	t.Parallel()
	out := readFile(t, "devices-l.txt")
	rec := &recorder{reply: func(args []string) ([]byte, error) {
		if args[0] == "devices" {
			return out, nil
		}
		return nil, &Error{Args: args, Msg: "adb: error: device '" + args[1] + "' not found"}
	}}
	d := New(Options{ADB: &ADB{Run: rec.run}})
	for name, want := range map[string]string{
		"android:NOPE":         "Android device NOPE is not attached (adb lists 0A1B2C3D4E5F, 192.168.1.5:5555",
		"android:0A1B2C3D4E5F": "Allow USB debugging",
		"android:ABCDEF1234":   "udev rule",
		"android:R58M":         "not attached",
	} {
		_, err := d.NewSession(t.Context(), name, netguard.Allowance{})
		if duet.ErrorCode(err) != duet.CodeBrowserUnavailable || !strings.Contains(duet.ErrorMessage(err), want) {
			t.Errorf("%s: got %v, want BROWSER_UNAVAILABLE containing %q", name, err, want)
		}
	}
	// The phone vanishes between the list and the forward.
	_, err := d.NewSession(t.Context(), "android:R58M1234ABC", netguard.Allowance{})
	if duet.ErrorCode(err) != duet.CodeDeviceLost {
		t.Errorf("a phone gone before the forward: got %v, want DEVICE_LOST", err)
	}
	if ls, _ := d.opts.Leases.FindDeviceLeases(t.Context()); len(ls) != 0 {
		t.Errorf("leases after failed sessions: got %d, want none", len(ls))
	}
}
