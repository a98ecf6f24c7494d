package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/netguard"
)

func TestPoolUnavailable(t *testing.T) {
	t.Parallel()
	notExec := t.TempDir() + "/chromium"
	if err := os.WriteFile(notExec, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		execPath string
	}{
		{"unknown name", "duet-no-such-chromium"},
		{"missing file", t.TempDir() + "/no/chromium"},
		{"not executable", notExec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := NewPool(Options{ExecPath: tt.execPath})
			defer p.Close()
			wantCode(t, p.Available(), duet.CodeBrowserUnavailable, "apt-get install -y chromium", "DUET_CHROME_PATH")
			_, err := p.NewSession(testCtx(t, 5*time.Second), Device{}, netguard.Allowance{})
			wantCode(t, err, duet.CodeBrowserUnavailable, "apt-get install -y chromium")
		})
	}
}

// TestPoolUnavailableOnPath runs without t.Parallel, because it changes PATH.
func TestPoolUnavailableOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p := NewPool(Options{})
	defer p.Close()
	wantCode(t, p.Available(), duet.CodeBrowserUnavailable, "chromium, chromium-browser, google-chrome", "apt-get install -y chromium")
	_, err := p.NewSession(testCtx(t, 5*time.Second), Device{}, netguard.Allowance{})
	wantCode(t, err, duet.CodeBrowserUnavailable, "DUET_CHROME_PATH")
}

func TestPoolStartFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		execPath string
		flags    map[string]any
		wantCode duet.Code
		wantMsg  string
	}{
		{"exits at once", "false", nil, duet.CodeBrowserUnavailable, "failed to start"},
		{"reserved flag", "true", map[string]any{"user-data-dir": "/tmp/x"}, duet.CodeInvalidArgument, "user-data-dir"},
		{"bad flag value", "true", map[string]any{"window-size": []int{1, 2}}, duet.CodeInvalidArgument, "window-size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(tt.execPath); err != nil {
				t.Skipf("no %s on PATH", tt.execPath)
			}
			p := NewPool(Options{ExecPath: tt.execPath, Flags: tt.flags})
			defer p.Close()
			_, err := p.NewSession(testCtx(t, 20*time.Second), Device{}, netguard.Allowance{})
			wantCode(t, err, tt.wantCode, tt.wantMsg)
			// The failed process leaves the pool once it is cleaned up.
			deadline := time.Now().Add(5 * time.Second)
			for p.Stats().Browsers != 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := p.Stats().Browsers; got != 0 {
				t.Errorf("got %d browsers 5s after a failed start, want 0", got)
			}
		})
	}
}

func TestPoolCap(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	p := NewPool(Options{MaxBrowsers: 1, MaxContextsPerBrowser: 2, Logger: testLogger()})
	defer p.Close()
	site := newSite(t)

	const runs = 6
	var (
		open, peak atomic.Int32
		wg         sync.WaitGroup
		errs       = make(chan error, runs)
	)
	for range runs {
		wg.Go(func() {
			ctx := testCtx(t, 45*time.Second)
			s, err := p.NewSession(ctx, Device{}, netguard.Allowance{})
			if err != nil {
				errs <- err
				return
			}
			n := open.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			err = s.Open(ctx, site.URL+"/page2?step=7")
			if err == nil {
				var got string
				got, err = s.Text(ctx, "#step")
				if err == nil && got != "step 7" {
					err = errors.New("got text " + got + ", want step 7")
				}
			}
			time.Sleep(50 * time.Millisecond) // hold the slot so that others wait
			open.Add(-1)
			s.Close()
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := peak.Load(); got > 2 {
		t.Errorf("got %d sessions open at once, want at most 2", got)
	}
	want := Stats{Browsers: 1, Sessions: 0, Waiting: 0, Started: 1}
	if got := p.Stats(); got != want {
		t.Errorf("Stats() = %+v, want %+v", got, want)
	}
}

func TestPoolWaitRespectsContext(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	p := NewPool(Options{MaxBrowsers: 1, MaxContextsPerBrowser: 1, Logger: testLogger()})
	defer p.Close()
	s := newSession(t, p, "desktop")
	_ = s

	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		wantCode duet.Code
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 200*time.Millisecond)
		}, duet.CodeTimeout},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}, duet.CodeCancelled},
	}
	for _, tt := range tests {
		ctx, cancel := tt.ctx()
		start := time.Now()
		_, err := p.NewSession(ctx, Device{}, netguard.Allowance{})
		cancel()
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: NewSession returned after %s, want about 200ms", tt.name, took)
		}
		wantCode(t, err, tt.wantCode)
	}
	if got := p.Stats().Waiting; got != 0 {
		t.Errorf("got %d waiting after the waits ended, want 0", got)
	}
}

func TestPoolReplacesDeadBrowser(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	p := NewPool(Options{MaxBrowsers: 1, Logger: testLogger()})
	defer p.Close()
	site := newSite(t)
	ctx := testCtx(t, 45*time.Second)

	s1 := newSession(t, p, "desktop")
	open(t, s1, site, "/")
	pid := s1.proc.pid
	if pid == 0 {
		t.Fatal("got no browser pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err := s1.Text(ctx, "h1")
	wantCode(t, err, duet.CodeBrowserError, "browser")
	s1.Close()

	s2 := newSession(t, p, "desktop")
	open(t, s2, site, "/page2?step=3")
	if got, err := s2.Text(ctx, "#step"); err != nil || got != "step 3" {
		t.Errorf("after a crash: Text(#step) = %q, %v; want %q, nil", got, err, "step 3")
	}
	if s2.proc.pid == pid {
		t.Errorf("the new session runs in the killed process %d", pid)
	}
	if got := p.Stats().Started; got != 2 {
		t.Errorf("got %d processes started, want 2", got)
	}

	// Closing the pool ends the sessions that are still open.
	p.Close()
	_, err = s2.Text(ctx, "#step")
	wantCode(t, err, duet.CodeBrowserError, "closed")
	s2.Close()
	_, err = p.NewSession(ctx, Device{}, netguard.Allowance{})
	wantCode(t, err, duet.CodeBrowserUnavailable, "closed")
	for _, b := range []*process{s1.proc, s2.proc} {
		if _, err := os.Stat(b.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("user data directory %s: got %v after Close, want it removed", b.dir, err)
		}
	}
}

// TestPoolRunsTheBrowserBehindALauncher: a launcher script that runs the
// browser without exec (Debian's chromium-headless-shell) is looked through,
// so the process the pool holds is the browser itself: killed, its sessions
// fail at once, and closing the pool leaves no browser behind (TestMain
// fails on a process with the tests' user data directory). Run through the
// shell, the kill would have hit the shell and the browser would have lived
// on.
func TestPoolRunsTheBrowserBehindALauncher(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	real, err := findExec("")
	if err != nil {
		t.Fatal(err)
	}
	launcher := filepath.Join(t.TempDir(), "chromium-launcher")
	if err := os.WriteFile(launcher, []byte("#!/bin/sh -e\n\n"+real+` "$@"`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := NewPool(Options{ExecPath: launcher, MaxBrowsers: 1, Logger: testLogger()})
	defer p.Close()
	site := newSite(t)
	s := newSession(t, p, "desktop")
	open(t, s, site, "/")
	defer s.Close()
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.proc.pid))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(cmdline, []byte("--user-data-dir=")) || bytes.HasPrefix(cmdline, []byte("/bin/sh")) {
		t.Fatalf("the pool holds process %d, %q: not the browser", s.proc.pid, cmdline)
	}
	if err := syscall.Kill(s.proc.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err = s.Text(testCtx(t, 45*time.Second), "h1")
	wantCode(t, err, duet.CodeBrowserError, "browser")
}

// awaitSpare waits until the pool holds a session opened ahead, and
// returns it.
func awaitSpare(t *testing.T, p *Pool) *Session {
	t.Helper()
	ctx := testCtx(t, 45*time.Second)
	for {
		p.mu.Lock()
		sp, changed := p.spare, p.changed
		p.mu.Unlock()
		if sp != nil {
			return sp
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("no spare session was opened")
		}
	}
}

// TestPoolOpensASessionAhead: after a second NewSession, the pool opens
// the next session in the background (its context, tab, emulation and guard), and
// the next NewSession for that device takes it, with the allowance of its
// own ctx; one for another device discards it and opens its own. The
// spare holds a slot but is no session of the pool's counters, and Close
// disposes of it.
func TestPoolOpensASessionAhead(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	site := newSite(t)
	// The guard refuses loopback but for what NewSession allows.
	p := NewPool(Options{MaxBrowsers: 1, MaxContextsPerBrowser: 3, Logger: testLogger(), Guard: &netguard.Policy{}})
	defer p.Close()
	ctx := testCtx(t, 45*time.Second)
	allowed := netguard.AllowURL(site.URL)

	// A pool used once opens no spare; from the second session on, it does.
	s0, err := p.NewSession(ctx, Device{}, allowed)
	if err != nil {
		t.Fatal(err)
	}
	s0.Close()
	p.mu.Lock()
	early := p.spare != nil || p.preparing
	p.mu.Unlock()
	if early {
		t.Error("a pool used once opened a spare session")
	}
	s1, err := p.NewSession(ctx, Device{}, allowed)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	spare := awaitSpare(t, p)
	if got := p.Stats().Sessions; got != 1 {
		t.Errorf("Stats().Sessions = %d with a spare, want 1", got)
	}
	s2, err := p.NewSession(ctx, Device{}, allowed)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2 != spare {
		t.Fatal("NewSession opened a session of its own while one for its device was ready")
	}
	if err := s2.Open(ctx, site.URL+"/page2?step=4"); err != nil {
		t.Fatalf("the spare session does not have the allowance NewSession gave it: %v", err)
	}
	if got, err := s2.Text(ctx, "#step"); err != nil || got != "step 4" {
		t.Errorf("Text(#step) = %q, %v; want %q", got, err, "step 4")
	}

	// Without the allowance, the guard refuses the site, spare or not.
	spare = awaitSpare(t, p)
	s3, err := p.NewSession(ctx, Device{}, netguard.Allowance{})
	if err != nil {
		t.Fatal(err)
	}
	if s3 != spare {
		t.Fatal("NewSession opened a session of its own while one for its device was ready")
	}
	wantCode(t, s3.Open(ctx, site.URL+"/"), duet.CodeURLRefused)
	s3.Close()

	// Another device: the spare goes, its slot with it (the pool is full
	// with s1, s2 and the spare otherwise).
	spare = awaitSpare(t, p)
	phone, err := DeviceByName("iphone-15")
	if err != nil {
		t.Fatal(err)
	}
	s4, err := p.NewSession(ctx, phone, allowed)
	if err != nil {
		t.Fatal(err)
	}
	defer s4.Close()
	if s4 == spare || s4.Device().Name != phone.Name {
		t.Fatalf("NewSession(%s) got the spare of another device (%s)", phone.Name, s4.Device().Name)
	}
	if got := p.Stats(); got.Sessions != 3 || got.Started != 1 {
		t.Errorf("Stats() = %+v, want 3 sessions in the 1 process started", got)
	}

	p.Close()
	if got := p.Stats().Sessions; got != 0 {
		t.Errorf("Stats().Sessions = %d after Close, want 0", got)
	}
	if spare.ctx.Err() == nil {
		t.Error("the discarded spare's tab is still open after Close")
	}
}
