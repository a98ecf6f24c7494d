package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/cli"
	"github.com/duet-test/duet/internal/httpapi"
)

// TestStdioListenStreamsBudgeted: over stdio too, a caller's
// subscriptions/listen streams (2026-07-28) take the catalog's stream
// slots: with DUET_MAX_PER_CALLER=2, of three streams asked for at once two
// are opened and one is answered with a JSON-RPC RATE_LIMITED error. The
// SDK handles listen requests concurrently, so which one is refused is not
// fixed; that exactly two are open is.
func TestStdioListenStreamsBudgeted(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"DUET_HOME": t.TempDir(), "DUET_USER": "alice", "DUET_WORKERS": "0", "DUET_MAX_PER_CALLER": "2", "DUET_LOG_LEVEL": "error"}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"mcp"}, cli.Env{Getenv: func(k string) string { return vars[k] }, Stdin: inR, Stdout: outW, Stderr: io.Discard})
		outW.Close()
	}()
	defer func() {
		cancel()
		inW.Close()
		go io.Copy(io.Discard, outR) // a reply still being written must not hold the server
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("duet mcp did not stop")
		}
	}()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"pipe","version":"1"}}`
	go func() {
		for id := 1; id <= 3; id++ {
			fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`+"\n", id, meta)
		}
	}()
	acked := map[float64]bool{}
	refused := map[int]bool{}
	sc := bufio.NewScanner(outR)
	for len(acked)+len(refused) < 3 && sc.Scan() {
		var msg struct {
			ID     *int `json:"id"`
			Method string
			Params struct {
				Meta map[string]any `json:"_meta"`
			}
			Error *struct {
				Code    int
				Message string
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			t.Fatalf("%s: %v", sc.Bytes(), err)
		}
		if msg.Method == "notifications/subscriptions/acknowledged" {
			id, _ := msg.Params.Meta["io.modelcontextprotocol/subscriptionId"].(float64)
			acked[id] = true
			if len(acked) > 2 {
				t.Fatalf("a third stream was opened: %s (open: %v)", sc.Bytes(), acked)
			}
			continue
		}
		if msg.ID == nil || msg.Error == nil {
			t.Fatalf("unexpected: %s", sc.Bytes())
		}
		if msg.Error.Code != httpapi.Codes.RPCCode(duet.CodeRateLimited) || !strings.HasPrefix(msg.Error.Message, "RATE_LIMITED:") {
			t.Fatalf("got %s, want a stream refused RATE_LIMITED", sc.Bytes())
		}
		refused[*msg.ID] = true
	}
	if len(acked) != 2 || len(refused) != 1 {
		t.Fatalf("streams acknowledged %v, refused %v (%v): want two open, one refused", acked, refused, sc.Err())
	}
	for id := range refused {
		if acked[float64(id)] {
			t.Fatalf("stream %d was both opened and refused", id)
		}
	}
}
