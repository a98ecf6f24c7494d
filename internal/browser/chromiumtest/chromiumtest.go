// Package chromiumtest starts Chromium for tests the way an operator starts
// one for DUET_BROWSER_URL: a separate process listening for DevTools
// connections (--remote-debugging-port=0), with the switches of
// browser.CommandLine (passed in, so that the browser package's own tests
// can use this package). It also has a TCP proxy that a test can kill, to
// cut the connection to a browser as an unplugged phone does, and that can
// hand the test every DevTools message the client sends.
package chromiumtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Browser is a Chromium process started by Start.
type Browser struct {
	// WS is the WebSocket address the browser printed:
	// ws://127.0.0.1:PORT/devtools/browser/ID.
	WS string
	// HTTP is http://127.0.0.1:PORT, whose /json/version names WS.
	HTTP string
	// Addr is 127.0.0.1:PORT.
	Addr string

	cmd  *exec.Cmd
	once sync.Once
	done chan struct{}
}

// Exec returns the Chromium executable, or "" when there is none: the
// DUET_CHROME_PATH variable, else chromium, chromium-browser or
// google-chrome on PATH.
func Exec() string {
	names := []string{"chromium", "chromium-browser", "google-chrome"}
	if p := os.Getenv("DUET_CHROME_PATH"); p != "" {
		names = []string{p}
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Require skips the test when there is no Chromium, unless
// DUET_REQUIRE_BROWSER=1 asks for a failure instead.
func Require(tb testing.TB) string {
	tb.Helper()
	p := Exec()
	if p == "" {
		if os.Getenv("DUET_REQUIRE_BROWSER") == "1" {
			tb.Fatal("DUET_REQUIRE_BROWSER=1 but no Chromium on PATH")
		}
		tb.Skip("skipping: no Chromium on PATH (set DUET_REQUIRE_BROWSER=1 to fail instead)")
	}
	return p
}

// Start starts a Chromium with the switches args(userDataDir) — pass
// func(dir string) []string { return browser.CommandLine(dir, 0) } — and
// waits until it listens for DevTools connections. The test's cleanup stops
// it and removes its profile.
func Start(tb testing.TB, args func(userDataDir string) []string) *Browser {
	tb.Helper()
	path := Require(tb)
	dir, err := os.MkdirTemp("", "duet-chromiumtest-")
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(path, args(dir)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the launcher script and its browser, as one group
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		tb.Fatalf("starting %s: %v", path, err)
	}
	b := &Browser{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(b.done) }()
	tb.Cleanup(func() {
		b.Kill()
		removeAll(dir)
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, ws, ok := strings.Cut(sc.Text(), "DevTools listening on "); ok {
				found <- strings.TrimSpace(ws)
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case b.WS = <-found:
	case <-b.done:
		tb.Fatalf("chromium exited before it listened for DevTools connections")
	case <-time.After(60 * time.Second):
		tb.Fatalf("chromium did not print its DevTools address within 60s")
	}
	u, err := url.Parse(b.WS)
	if err != nil {
		tb.Fatalf("chromium printed %q: %v", b.WS, err)
	}
	b.Addr, b.HTTP = u.Host, "http://"+u.Host
	return b
}

// Kill stops the browser (its whole process group) and waits for it.
func (b *Browser) Kill() {
	b.once.Do(func() {
		if b.cmd.Process != nil {
			syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
		}
	})
}

func removeAll(dir string) {
	for range 100 {
		if os.RemoveAll(dir) == nil {
			return
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// Proxy forwards TCP connections from a loopback port to a target address,
// like `adb forward` does from this machine to a phone. Kill closes the
// listener and every connection at once.
type Proxy struct {
	Addr string // 127.0.0.1:PORT

	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	killed bool
	sent   func(msg []byte)
	wg     sync.WaitGroup
}

// Record hands sent each WebSocket message that a client sends through the
// proxy from now on (each protocol command, as the browser reads it); it is
// called from the proxy's goroutines, one message at a time per
// connection. Plain HTTP requests before the upgrade are passed over.
func (p *Proxy) Record(sent func(msg []byte)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = sent
}

// NewProxy starts a proxy to target; the test's cleanup kills it.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.serve)
	tb.Cleanup(p.Kill)
	return p
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.pipe(c) })
	}
}

func (p *Proxy) pipe(c net.Conn) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	u, err := d.DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil || !p.track(c, u) {
		c.Close()
		if u != nil {
			u.Close()
		}
		return
	}
	p.mu.Lock()
	sent := p.sent
	p.mu.Unlock()
	var from io.Reader = c
	if sent != nil {
		pr, pw := io.Pipe()
		from = io.TeeReader(c, pw)
		p.wg.Go(func() {
			err := readMessages(bufio.NewReader(pr), sent)
			pr.CloseWithError(err) // the tee's writes fail from now on: the copy ends
		})
		defer pw.Close()
	}
	var wg sync.WaitGroup
	wg.Go(func() { io.Copy(u, from); u.Close() })
	wg.Go(func() { io.Copy(c, u); c.Close() })
	wg.Wait()
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// Kill closes the proxy and cuts every connection through it.
func (p *Proxy) Kill() {
	p.mu.Lock()
	p.killed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// readMessages reads what a client sends over one connection: HTTP
// requests until one upgrades to WebSocket, then the frames of the
// WebSocket, handing each whole message (unmasked) to sent.
func readMessages(r *bufio.Reader, sent func([]byte)) error {
	for upgraded := false; !upgraded; {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if strings.HasPrefix(strings.ToLower(line), "upgrade:") && strings.Contains(strings.ToLower(line), "websocket") {
				upgraded = true
			}
			if line == "\r\n" {
				break
			}
		}
	}
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return err
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(r, b[:]); err != nil {
				return err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if n > 1<<30 {
			return fmt.Errorf("a WebSocket frame of %d bytes", n)
		}
		var mask [4]byte
		if h[1]&0x80 != 0 {
			if _, err := io.ReadFull(r, mask[:]); err != nil {
				return err
			}
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return err
		}
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
		op := h[0] & 0x0f
		if op >= 0x8 { // a control frame: close, ping, pong
			continue
		}
		msg = append(msg, payload...)
		if h[0]&0x80 != 0 { // the message's last frame
			sent(msg)
			msg = nil
		}
	}
}

// Port returns the proxy's port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// Conns returns how many connections went through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2
}
