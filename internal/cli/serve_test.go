package cli_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
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

var servingAddr = regexp.MustCompile(`msg="duet serving" addr=(127\.0\.0\.1:\d+)`)

// TestServeLogsAtInfo: at the default level `duet serve` logs no line per
// stateless HTTP call (the SDK's "server connecting" and "session
// connected" are Debug), and it says when it stops and when it has
// stopped.
func TestServeLogsAtInfo(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.env["DUET_LOG_LEVEL"] = "info"
	h.env["DUET_GATEWAY_API_KEYS"] = "gateway-key-for-the-test"
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, cli.Env{
			Getenv: func(k string) string { return h.env[k] },
			Stdin:  io.NopCloser(strings.NewReader("")), Stdout: io.Discard, Stderr: &errOut,
		})
	}()
	var addr string
	for deadline := time.Now().Add(60 * time.Second); addr == ""; time.Sleep(50 * time.Millisecond) {
		if m := servingAddr.FindStringSubmatch(errOut.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", errOut.String())
		}
	}
	// A plain tools/call may take the fast path (no SDK session); a
	// tools/list goes through the SDK, which logs per request.
	for i, method := range []string{"tools/list", "tools/call", "tools/list"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/mcp/http", strings.NewReader(
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"name":"list_test_tasks","arguments":{}}}`, i+1, method)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Api-Key", "gateway-key-for-the-test")
		req.Header.Set("SSO-Emp-Id", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"result"`) {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, body)
		}
	}
	cancel(errors.New("interrupt signal received"))
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	log := errOut.String()
	for _, noise := range []string{"server connecting", "session connected", "session disconnected", "server session"} {
		if strings.Contains(log, noise) {
			t.Errorf("the log at info has %q:\n%s", noise, log)
		}
	}
	for _, want := range []string{`msg="duet serve stopping: finishing the requests and steps in flight`, `cause="interrupt signal received"`, `msg="duet serve stopped"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

// TestServeWorkersFlag: `duet serve --workers 0` is an API-only instance —
// no worker, whatever DUET_WORKERS says (0 used to mean "not given", and
// two workers started) — and a count out of range is a usage error.
func TestServeWorkersFlag(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	h.env["DUET_LOG_LEVEL"] = "info"
	h.env["DUET_WORKERS"] = "3"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--workers", "0"}, cli.Env{
			Getenv: func(k string) string { return h.env[k] },
			Stdin:  io.NopCloser(strings.NewReader("")), Stdout: io.Discard, Stderr: &errOut,
		})
	}()
	serving := regexp.MustCompile(`msg="duet serving" .* workers=(\d+)`)
	for m := serving.FindStringSubmatch(errOut.String()); m == nil; m = serving.FindStringSubmatch(errOut.String()) {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errOut.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if m := serving.FindStringSubmatch(errOut.String()); m[1] != "0" {
		t.Errorf("serve --workers 0 runs %s workers:\n%s", m[1], errOut.String())
	}
	cancel()
	<-done
	code, _, errText := h.duet(t.Context(), "serve", "--addr", "127.0.0.1:0", "--workers", "-1")
	if code != 2 || !strings.Contains(errText, "--workers") {
		t.Errorf("--workers -1: exit %d, %q; want a usage error", code, errText)
	}
}
