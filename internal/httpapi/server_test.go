package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestConnectionCap holds real TCP connections against the server: clients
// without credentials are answered and disconnected, silent and idle
// connections cannot hold the server's file descriptors, and a client with
// credentials still gets through; the server never has more connections
// open than its cap.
func TestConnectionCap(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat := catalog.New(db, catalog.Options{})
	h := httpapi.New(httpapi.Options{Catalog: cat, Auth: auth.New(db, []string{key}, ""),
		MCP: mcpserver.New(cat, mcpserver.Options{Codes: httpapi.Codes})})
	const limit = 16
	srv := httpapi.NewServer(h, httpapi.ServerOptions{MaxConns: limit, ReadHeaderTimeout: 500 * time.Millisecond, IdleTimeout: 2 * time.Second})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: inner}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	addr := ln.Addr().String()
	// The guard: no wait of the test lasts longer, so that a server that
	// never answers, or never hangs up, fails the test instead of hanging
	// it. The waits end at the event they wait for (a response, the
	// server's hang-up); the guard is only their bound, generous for a
	// loaded machine, where the test's forty requests in a row alone
	// took a minute.
	const guard = time.Minute
	dial := func() net.Conn {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, guard)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(guard))
		return c
	}
	request := func(creds bool) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		r := "POST /mcp/http HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
			"Mcp-Protocol-Version: 2025-06-18\r\nConnection: keep-alive\r\n"
		if creds {
			r += "X-Api-Key: " + key + "\r\nSSO-Emp-Id: alice\r\n"
		}
		return r + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
	}
	// closed waits for the server to close c (within the guard).
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(guard))
		_, err := io.Copy(io.Discard, c)
		return err == nil // EOF: the server closed it
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()

	// 1. Sixty clients without credentials, keep-alive asked: 401 and the
	// server hangs up on each.
	var wg sync.WaitGroup
	var mu sync.Mutex
	problems := map[string]int{}
	for range 60 {
		c := dial()
		conns = append(conns, c)
		wg.Go(func() {
			c.Write([]byte(request(false)))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			switch {
			case err != nil:
				mu.Lock()
				problems[err.Error()]++
				mu.Unlock()
			case resp.StatusCode != 401 || !resp.Close:
				mu.Lock()
				problems[fmt.Sprintf("%d close=%v", resp.StatusCode, resp.Close)]++
				mu.Unlock()
			case !closed(c):
				mu.Lock()
				problems["still open"]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(problems) > 0 {
		t.Errorf("clients without credentials: %v", problems)
	}

	// 2. A hundred connections that say nothing, and a slowloris.
	slow := dial()
	conns = append(conns, slow)
	slow.Write([]byte("POST /mcp/http HTTP/1.1\r\nHost: " + addr + "\r\n"))
	for range 100 {
		conns = append(conns, dial())
	}
	// 3. A client with credentials still gets through, on a new connection,
	// again and again.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: guard}
	for i := range 3 {
		req, _ := http.NewRequest("POST", "http://"+addr+"/mcp/http", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("SSO-Emp-Id", "alice")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d with credentials among 100 silent connections: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("request %d with credentials: %d", i, resp.StatusCode)
		}
		t.Logf("request %d with credentials answered in %s", i, time.Since(start).Round(time.Millisecond))
	}
	// The slowloris is cut off by the read-header timeout (or evicted).
	if !closed(slow) {
		t.Error("a connection sending its headers slowly is still open")
	}
	// 4. Forty authenticated keep-alive clients going idle: the cap holds,
	// and the idle ones make room.
	for range 40 {
		c := dial()
		conns = append(conns, c)
		c.Write([]byte(request(true)))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("a keep-alive client with credentials: %v %v", resp, err)
		}
	}
	open, peak := srv.Conns()
	t.Logf("connections: %d open now, at most %d at once (cap %d); the listener saw at most %d", open, peak, limit, ln.peakOpen())
	if peak > limit || ln.peakOpen() > limit {
		t.Errorf("%d (%d) connections were open at once; the cap is %d", ln.peakOpen(), peak, limit)
	}
}

// countingListener counts the connections the server holds: accepted and
// not yet closed.
type countingListener struct {
	net.Listener
	mu         sync.Mutex
	open, peak int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.peak = max(l.peak, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) peakOpen() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peak
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
