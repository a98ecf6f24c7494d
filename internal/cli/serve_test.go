package cli_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/cli"
)

// TestServeWarnsWhenExposed: `duet serve` bound beyond loopback says so in
// its log; bound to loopback it does not.
func TestServeWarnsWhenExposed(t *testing.T) {
	t.Parallel()
	for addr, warned := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		h := newHome(t)
		h.env["DUET_LOG_LEVEL"] = "info"
		ctx, cancel := context.WithCancel(t.Context())
		var errOut syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- cli.Main(ctx, []string{"serve", "--addr", addr, "--workers", "1"}, cli.Env{
				Getenv: func(k string) string { return h.env[k] },
				Stdin:  io.NopCloser(strings.NewReader("")), Stdout: io.Discard, Stderr: &errOut,
			})
		}()
		deadline := time.After(60 * time.Second)
	wait:
		for {
			select {
			case <-deadline:
				cancel()
				t.Fatalf("%s: serve did not start: %s", addr, errOut.String())
			case code := <-done:
				cancel()
				t.Fatalf("%s: serve exited %d: %s", addr, code, errOut.String())
			case <-time.After(50 * time.Millisecond):
				if strings.Contains(errOut.String(), "duet serving") {
					break wait
				}
			}
		}
		cancel()
		<-done
		if log := errOut.String(); strings.Contains(log, "every machine that can reach it") != warned {
			t.Errorf("--addr %s: want warned=%v:\n%s", addr, warned, log)
		}
	}
}

// TestUserIDsOnTheCommandLine: --as and DUET_USER follow the one user-id
// rule; a bad one is a usage error naming what to fix.
func TestUserIDsOnTheCommandLine(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	code, _, errOut := h.duet(t.Context(), "task", "list", "--as", "bob\nalice")
	if code != 2 || !strings.Contains(errOut, "--as") || strings.Contains(errOut, "bob\nalice") {
		t.Errorf("--as with a newline: exit %d, %q", code, errOut)
	}
	h.env["DUET_USER"] = "a b"
	code, _, errOut = h.duet(t.Context(), "task", "list")
	if code != 2 || !strings.Contains(errOut, "DUET_USER") {
		t.Errorf("DUET_USER with a space: exit %d, %q", code, errOut)
	}
}
