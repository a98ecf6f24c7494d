package fast_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/compiler"
	"github.com/duet-test/duet/internal/httpapi"
	"github.com/duet-test/duet/internal/mcpserver"
	"github.com/duet-test/duet/internal/sqlite"
)

// BenchmarkStdioFastPathCall: one governed get_test_task over stdio, one
// call at a time, as a client on a pipe sends it after the handshake (the
// time includes the SQLite read, the audit and the pipe's round trip), with
// the fast path and through the SDK alone.
func BenchmarkStdioFastPathCall(b *testing.B) {
	db, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "duet.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	s, err := compiler.CompileSuite(context.Background(), []byte("task: {name: shop}\ncases: [{title: a, steps: [{assert: 'true'}]}]\n"), "", compiler.Options{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := db.ApplySuite(context.Background(), "alice", s)
	if err != nil {
		b.Fatal(err)
	}
	srv := mcpserver.New(catalog.New(db, catalog.Options{}), mcpserver.Options{Codes: httpapi.Codes, FastPath: mcpserver.FastPathOn})
	for _, path := range []struct {
		name string
		o    mcpserver.StdioOptions
	}{{"fast", mcpserver.StdioOptions{}}, {"sdk", mcpserver.StdioOptions{NoFastPath: true}}} {
		b.Run(path.name, func(b *testing.B) {
			sr, cw := io.Pipe()
			cr, sw := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- srv.ServeStdioWith(context.Background(), duet.Caller{UserID: "alice"}, sr, sw, path.o) }()
			out := bufio.NewReaderSize(cr, 1<<16)
			roundTrip := func(line string) string {
				if _, err := io.WriteString(cw, line+"\n"); err != nil {
					b.Fatal(err)
				}
				reply, err := out.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				return reply
			}
			roundTrip(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
			io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			call := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":%q}}}`, res.Task.ID)
			before := srv.FastPathServed()
			b.ReportAllocs()
			for b.Loop() {
				if r := roundTrip(call); !strings.Contains(r, `"caseCount":1`) {
					b.Fatalf("reply %s", r)
				}
			}
			if served := srv.FastPathServed() - before; (served > 0) != (path.name == "fast") {
				b.Fatalf("%s: the fast path served %d calls", path.name, served)
			}
			cw.Close()
			go io.Copy(io.Discard, cr)
			<-done
		})
	}
}
