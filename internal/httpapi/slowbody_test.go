package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/config"
	"github.com/duet-test/duet/internal/httpapi"
)

// slowClient is a client that sends the headers of a request without
// credentials and then its body one byte at a time, until the server hangs
// up.
type slowClient struct {
	c      net.Conn
	answer chan string // what the server sent before it closed the connection
}

func startSlow(t *testing.T, from, addr, path string, stop <-chan struct{}) *slowClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n", path, addr)
	s := &slowClient{c: c, answer: make(chan string, 1)}
	go func() {
		b, err := io.ReadAll(c)
		if err != nil {
			b = append(b, "(read: "+err.Error()+")"...)
		}
		s.answer <- string(b)
	}()
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	return s
}

// TestSlowBodies: twenty clients without credentials at one address send
// the bodies of POST /signin a byte at a time, on a server with room for
// eight connections. All but two (the address's budget) are answered 429
// and disconnected at once; /healthz and /readyz answer a client at
// another address while the two are still sending; an authenticated
// request from the slow clients' own address is not held by their budget;
// and the two are cut off by the server when their bodies fall behind the
// minimum rate.
func TestSlowBodies(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DUET_HOME": t.TempDir(), "DUET_LOG_LEVEL": "error", "DUET_GATEWAY_API_KEYS": key}
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), cfg, app.Options{Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	srv := httpapi.NewServer(a.Handler(app.ServeOptions{}), httpapi.ServerOptions{MaxConns: 8, BodyTimeout: 10 * time.Second, MaxUnauthenticated: 2})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(t.Context()) })
	addr := ln.Addr().String()

	stop := make(chan struct{})
	defer close(stop)
	var slow []*slowClient
	for range 20 {
		slow = append(slow, startSlow(t, "127.0.0.2", addr, "/signin", stop))
	}

	// The refused are answered and disconnected without waiting for their
	// bodies; two keep sending.
	type answer struct {
		i   int
		got string
	}
	answers := make(chan answer, len(slow))
	for i, s := range slow {
		go func() { answers <- answer{i, <-s.answer} }()
	}
	answered := map[int]bool{}
	deadline := time.After(time.Minute)
	for len(answered) < len(slow)-2 {
		select {
		case a := <-answers:
			if !strings.HasPrefix(a.got, "HTTP/1.1 429 ") || !strings.Contains(a.got, "Connection: close") {
				t.Fatalf("a slow client was answered, before the address's budget refused the others:\n%.300s", a.got)
			}
			answered[a.i] = true
		case <-deadline:
			t.Fatalf("%d of %d slow clients without credentials from one address refused; want all but 2", len(answered), len(slow))
		}
	}
	var held []*slowClient
	for i, s := range slow {
		if !answered[i] {
			held = append(held, s)
		}
	}

	// Others still get answers, the two slow bodies notwithstanding.
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := hc.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s while slow clients send: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}
	// A request with credentials from the slow clients' address reads its
	// body whatever their budget says.
	from2 := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	hc2 := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: from2.DialContext}}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp/tools/list", strings.NewReader(`{"user":{"empId":"alice"}}`))
	req.Header.Set("X-Api-Key", key)
	req.Header.Set("SSO-Emp-Id", "alice")
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc2.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("an authenticated request from the slow clients' address: %s %s", resp.Status, body)
	}
	open, _ := srv.Conns()
	select {
	case a := <-answers:
		t.Logf("a slow client was cut off before health was checked:\n%.100s", a.got)
		answers <- a
	default:
		t.Logf("health answered while the 2 slow clients were still sending (%d connections open)", open)
	}

	// The two that were let in are cut off by the server: a byte every
	// 100ms is far below the minimum rate.
	for range held {
		select {
		case a := <-answers:
			// The request fails (TIMEOUT) and the server hangs up.
			if !strings.HasPrefix(a.got, "HTTP/1.1 ") || strings.HasPrefix(a.got, "HTTP/1.1 2") || !strings.Contains(a.got, "Connection: close") {
				t.Errorf("a slow body was ended with:\n%.300s", a.got)
			}
		case <-time.After(time.Minute):
			t.Fatal("the server never cut off a body that came at 10 bytes a second")
		}
	}
}

// TestBodyAtRate: a body that keeps to the minimum rate is read whole even
// when it takes longer than BodyTimeout, and the connection serves the next
// request (the body's clock is stopped once it is read).
func TestBodyAtRate(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []int
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, len(b))
		mu.Unlock()
		// Answer after the body's deadline would have passed: the reply
		// and the connection must not be cut.
		time.Sleep(700 * time.Millisecond)
		fmt.Fprintf(w, "%d", len(b))
	})
	srv := httpapi.NewServer(h, httpapi.ServerOptions{BodyTimeout: 500 * time.Millisecond, MinBodyRate: 100})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown(t.Context()) })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for round := range 2 {
		// 200 bytes in chunks of 50, one every 200ms: 250 bytes a second,
		// about 800ms in all.
		fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\nAuthorization: Bearer x\r\n\r\n")
		for range 4 {
			time.Sleep(200 * time.Millisecond)
			c.Write([]byte(strings.Repeat("b", 50)))
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "200" {
			t.Fatalf("round %d: %s %s", round, resp.Status, b)
		}
	}
}
