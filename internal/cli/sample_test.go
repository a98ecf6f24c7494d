package cli_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/cli"
)

// TestSampleOrderServerCommand checks that `duet sample order-server` prints
// its endpoint and, given no token, makes one up, prints it and requires it.
func TestSampleOrderServerCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"sample", "order-server", "--addr", "127.0.0.1:0"}, cli.Env{
			Getenv: func(string) string { return "" }, Stdin: io.NopCloser(strings.NewReader("")), Stdout: pw, Stderr: io.Discard,
		})
		pw.Close()
	}()
	var token, url string
	sc := bufio.NewScanner(pr)
	for (url == "" || token == "") && sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "bearer token: "); ok {
			token = v
		}
		if v, ok := strings.CutPrefix(line, "order MCP server listening on "); ok {
			url = v
		}
	}
	go io.Copy(io.Discard, pr)
	if token == "" || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("got token %q, url %q", token, url)
	}
	post := func(auth string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(""); got != http.StatusUnauthorized {
		t.Errorf("without a token: got %d, want 401", got)
	}
	if got := post("Bearer wrong"); got != http.StatusUnauthorized {
		t.Errorf("with a wrong token: got %d, want 401", got)
	}
	if got := post("Bearer " + token); got != http.StatusOK {
		t.Errorf("with the token: got %d, want 200", got)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the server did not stop")
	}
}

// TestSampleServersOnABusyAddress: the second `duet sample shop &` of the
// README said "cannot listen" without a cause; the order server printed a
// token before failing. Now both say the address is in use and what to
// do, and print nothing else.
func TestSampleServersOnABusyAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, args := range [][]string{{"sample", "shop"}, {"sample", "order-server"}} {
		var out, errOut strings.Builder
		code := cli.Main(t.Context(), append(args, "--addr", ln.Addr().String()), cli.Env{
			Getenv: func(string) string { return "" }, Stdin: io.NopCloser(strings.NewReader("")), Stdout: &out, Stderr: &errOut,
		})
		want := "error: UNAVAILABLE: cannot listen on " + ln.Addr().String() + ": the address is in use by another process; if it is this sample server"
		if code != 1 || !strings.Contains(errOut.String(), want) || !strings.Contains(errOut.String(), "--addr 127.0.0.1:PORT") {
			t.Errorf("%s on a busy address: exit %d, stderr %q, want 1 and %q", strings.Join(args, " "), code, errOut.String(), want)
		}
		if out.Len() > 0 {
			t.Errorf("%s on a busy address printed %q, want nothing", strings.Join(args, " "), out.String())
		}
	}
}
