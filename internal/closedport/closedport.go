// Package closedport gives a test an address where nothing answers, that
// no one else can take while the test runs. A fixed port (8431, the
// README's sample shop; 1 or 9, "surely closed") can be taken on a shared
// machine — by the README's own session, by another test — and a port
// found free and closed again can be taken before it is dialled. Addr
// keeps a listener on the port and resets every connection it gets.
package closedport

import (
	"net"
	"testing"
)

// Addr returns "127.0.0.1:PORT", a loopback address held by the test until
// it ends: every connection to it is accepted and reset at once (a TCP
// RST), so a client fails without waiting, as on a closed port.
func Addr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("closedport: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener is closed
			}
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // close with a reset, not an orderly end
			}
			c.Close()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// URL returns "http://" + Addr(tb).
func URL(tb testing.TB) string {
	tb.Helper()
	return "http://" + Addr(tb)
}
