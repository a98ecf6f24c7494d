package browser

import (
	"syscall"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestPoolSpreadsOverProcesses: with Options.Processes 2, a session opened
// while another runs starts a second Chromium process; the next goes to
// the process with the fewest sessions, and no third process starts; one at
// a time, the first process serves alone. When a process dies, the other
// keeps its sessions and no new session goes to the dead one.
func TestPoolSpreadsOverProcesses(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	site := newSite(t)
	ctx := testCtx(t, 3*time.Minute) // a bound for a loaded machine, not a figure

	serial := NewPool(Options{MaxBrowsers: 3, Processes: 2, Logger: testLogger()})
	defer serial.Close()
	for range 3 {
		s := newSession(t, serial, "desktop")
		open(t, s, site, "/")
		s.Close()
	}
	if got := serial.Stats().Started; got != 1 {
		t.Errorf("one session at a time: got %d processes started, want 1", got)
	}

	p := NewPool(Options{MaxBrowsers: 3, Processes: 2, Logger: testLogger()})
	defer p.Close()
	a := newSession(t, p, "desktop")
	b := newSession(t, p, "desktop")
	if a.proc == b.proc {
		t.Fatalf("two sessions at once share process %d, want one each", a.proc.id)
	}
	c := newSession(t, p, "desktop")
	if st := p.Stats(); st.Started != 2 {
		t.Errorf("three sessions: got %d processes started, want 2 (Processes)", st.Started)
	}
	for _, s := range []*Session{a, b, c} {
		open(t, s, site, "/page2?step=4")
		if got, err := s.Text(ctx, "#step"); err != nil || got != "step 4" {
			t.Errorf("process %d: Text(#step) = %q, %v", s.proc.id, got, err)
		}
	}

	// Kill the process of b: its sessions fail, the others go on, and no
	// new session goes to the dead process.
	if err := syscall.Kill(b.proc.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, err := b.Text(ctx, "#step")
	wantCode(t, err, duet.CodeBrowserError, "browser")
	b.Close()
	if c.proc == b.proc {
		c.Close()
	}
	d := newSession(t, p, "desktop")
	if d.proc == b.proc {
		t.Errorf("after the crash the new session went to the dead process %d", d.proc.id)
	}
	for _, s := range []*Session{a, d} {
		open(t, s, site, "/page2?step=5")
		if got, err := s.Text(ctx, "#step"); err != nil || got != "step 5" {
			t.Errorf("after the crash, process %d: Text(#step) = %q, %v", s.proc.id, got, err)
		}
	}
}
