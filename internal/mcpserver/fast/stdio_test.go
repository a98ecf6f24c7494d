package fast_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/conformance"
	"github.com/duet-test/duet/internal/mcpserver"
)

// stdioSession drives ServeStdioWith line by line, as a client on a pipe.
type stdioSession struct {
	t       *testing.T
	in      *io.PipeWriter
	mu      sync.Mutex
	byID    map[string]string // reply lines by id
	noID    []string          // replies without an id
	arrived chan struct{}
	done    chan error
	out     *io.PipeWriter // the server's end of its output
	read    chan struct{}  // closed when every output line is recorded
}

func startStdio(t *testing.T, srv *mcpserver.Server, o mcpserver.StdioOptions) *stdioSession {
	t.Helper()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	ss := &stdioSession{t: t, in: cw, byID: map[string]string{}, arrived: make(chan struct{}, 1), done: make(chan error, 1),
		out: sw, read: make(chan struct{})}
	go func() { ss.done <- srv.ServeStdioWith(t.Context(), duet.Caller{UserID: "alice"}, sr, sw, o) }()
	go func() {
		defer close(ss.read)
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if strings.HasPrefix(sc.Text(), "[") {
				m.ID = nil // a batch's answer
			} else if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("not JSON: %q", sc.Text())
				continue
			}
			ss.mu.Lock()
			if m.ID == nil {
				ss.noID = append(ss.noID, sc.Text())
			} else {
				ss.byID[string(m.ID)] = sc.Text()
			}
			ss.mu.Unlock()
			select {
			case ss.arrived <- struct{}{}:
			default:
			}
		}
	}()
	return ss
}

// send writes lines, then waits for a reply to each of ids (JSON as sent).
func (ss *stdioSession) send(ids []string, lines ...string) {
	ss.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(ss.in, l+"\n"); err != nil {
			ss.t.Fatal(err)
		}
	}
	ss.wait(ids...)
}

func (ss *stdioSession) wait(ids ...string) {
	ss.t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ss.mu.Lock()
		missing := []string{}
		for _, id := range ids {
			if _, ok := ss.byID[id]; !ok {
				missing = append(missing, id)
			}
		}
		ss.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-ss.arrived:
		case <-deadline:
			ss.t.Fatalf("no reply to %v within 30s", missing)
		}
	}
}

func (ss *stdioSession) close() {
	ss.t.Helper()
	ss.in.Close()
	select {
	case err := <-ss.done:
		if err != nil {
			ss.t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(30 * time.Second):
		ss.t.Fatal("ServeStdio did not return after the end of input")
	}
	// Every line the server wrote is recorded before the caller reads them.
	ss.out.Close()
	<-ss.read
}

// newTraceRe matches the trace ids the server makes up; the traceparent's
// (4bf9...) is kept, so that a call that takes it is compared exactly.
var newTraceRe = regexp.MustCompile(`"io.duet/traceId":"(?:[0-9a-f]{32})"`)

func masked(line string) string {
	if strings.Contains(line, `"io.duet/traceId":"4bf92f3577b34da6a3ce929d0e0e4736"`) {
		return line
	}
	return newTraceRe.ReplaceAllString(line, `"io.duet/traceId":"<random>"`)
}

// pipelined are limits for tests that send many calls at once: the
// per-caller cap (8 in flight by default) would refuse some of them, on
// either path, as timing has it (TestStdioFastPathKeepsTheCaps checks it
// holds on the fast path).
var pipelined = catalog.Limits{MaxPerCaller: 1024, MaxConcurrent: 1024}

// blocker is a read-only tool that runs until its context ends.
type blocker struct {
	started chan string
}

type blockIn struct {
	Tag string `json:"tag"`
}

func (b *blocker) tool() *catalog.Tool {
	return catalog.Define("block_until_cancelled", "Block", "runs until cancelled", catalog.Annotations{ReadOnly: true}, nil,
		func(ctx context.Context, _ *catalog.Env, in blockIn) (textOut, error) {
			b.started <- in.Tag
			<-ctx.Done()
			return textOut{}, duet.Errorf(duet.CodeTimeout, "cancelled")
		})
}

type stdioStep struct {
	lines []string
	ids   []string // replies to wait for before the next step
	fast  int      // how many of lines the fast path answers
	block string   // a blocker tag to wait for after sending (then the next step runs while it blocks)
}

// runStdioScript plays steps against a fresh session and returns the reply
// lines by id (masked) and those without an id, and how many requests the
// fast path served.
func runStdioScript(t *testing.T, p *twoPaths, b *blocker, o mcpserver.StdioOptions, steps []stdioStep) (map[string]string, []string, int64) {
	t.Helper()
	before := p.srv.FastPathServed()
	ss := startStdio(t, p.srv, o)
	for i, st := range steps {
		beforeStep := p.srv.FastPathServed()
		for _, l := range st.lines {
			io.WriteString(ss.in, l+"\n")
		}
		if st.block != "" {
			select {
			case tag := <-b.started:
				if tag != st.block {
					t.Fatalf("step %d: blocker %q started, want %q", i, tag, st.block)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("step %d: blocker %q did not start", i, st.block)
			}
		}
		ss.wait(st.ids...)
		if got := p.srv.FastPathServed() - beforeStep; !o.NoFastPath && got != int64(st.fast) {
			t.Errorf("step %d: the fast path served %d requests, want %d: %v", i, got, st.fast, st.lines)
		}
	}
	ss.close()
	out := map[string]string{}
	for id, l := range ss.byID {
		out[id] = masked(l)
	}
	sort.Strings(ss.noID)
	return out, ss.noID, p.srv.FastPathServed() - before
}

// TestStdioFastPathIsByteEquivalent plays the same client — a real
// handshake, then many tools/call variants, cancellations, a duplicate id —
// with the stdio fast path on and off, and requires the same reply lines,
// id by id, byte for byte (only the trace ids the server makes up are
// masked), and that the fast path answered exactly the calls it is meant
// to (FastPathServed), so the comparison cannot pass with it switched off.
func TestStdioFastPathIsByteEquivalent(t *testing.T) {
	t.Parallel()
	b := &blocker{started: make(chan string, 4)}
	p := newTwoPathsLimits(t, pipelined, b.tool())
	id := p.taskID
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	}
	const tp = `"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`
	variants := []struct {
		params string
		fast   bool
	}{
		{`{"name":"get_test_task","arguments":{"taskId":"` + id + `"}}`, true},
		{`{"name":"list_test_tasks","arguments":{}}`, true},
		{`{"name":"list_test_tasks"}`, true},
		{`{"name":"list_test_tasks","arguments":{"limit":1,"q":"<&>"}}`, true},
		{`{"name":"list_test_cases","arguments":{"taskId":"` + id + `","limit":1}}`, true},
		{`{"name":"get_test_task","arguments":{"taskId":"task_missing"}}`, true},
		{`{"name":"get_test_task","arguments":{"taskId":42}}`, true},
		{`{"name":"get_test_task","arguments":{"taskId":"x","extra":true}}`, true},
		{`{"name":"get_test_task","arguments":{"taskId":"` + strings.Repeat("x", 2<<20) + `"}}`, true},
		{`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},` + tp + `}`, true},
		{`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"traceparent":"garbage"}}`, true},
		{`{"name":"get_test_task","Name":"list_test_tasks","arguments":{"taskId":"` + id + `"}}`, true},
		{`{"name":"` + conformance.ToolImage + `","arguments":{}}`, true},
		{`{"name":"` + conformance.ToolMixed + `","arguments":{}}`, true},
		{`{"name":"` + conformance.ToolError + `","arguments":{}}`, true},
		{`{"name":"list_test_tasks","arguments":null}`, false},
		{`{"name":"get_test_task","arguments":[1]}`, false},
		{`{"name":"get_test_task","arguments":"x"}`, false},
		{`{"name":"no_such_tool","arguments":{}}`, false},
		{`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"progressToken":"p"}}`, false},
		{`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"progressToken":7,"traceparent":"x"}}`, false},
		{`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"_meta":{"other":1}}`, false},
		{`{"name":"get_test_task","arguments":{"taskId":"` + id + `"},"requestState":"s"}`, false},
		{`{"name":"start_test_run","arguments":{"taskId":"` + id + `"}}`, false}, // not read-only: no idempotencyKey, refused by the SDK path's tool
		{`{"NAME":"list_test_tasks","arguments":{}}`, false},
		{`{"name":"list_test_tasks","arguments":{"q":"` + "\xff" + `"}}`, true}, // read as the SDK reads it
		{`{"name":"get_test_task","arguments":{"taskId":"x","taskId":"` + id + `"}}`, true},
		{`{"name":"get_test_task","name":"list_test_tasks","arguments":{}}`, true},
		{`{"name":"list_test_tasks","arguments":{"q":` + strings.Repeat("[", 997) + strings.Repeat("]", 997) + `}}`, true}, // 1000 deep in all
	}
	var calls []string
	var ids []string
	fast := 0
	for i, v := range variants {
		for j, idf := range []string{`%d`, `"s%d"`} {
			cid := fmt.Sprintf(idf, 100+2*i+j)
			calls = append(calls, call(cid, v.params))
			ids = append(ids, cid)
			if v.fast {
				fast++
			}
		}
	}
	// Frames the SDK reads in its own way.
	odd := []struct {
		line, id string
		fast     bool
	}{
		{` ` + "\t" + `{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"list_test_tasks"}}` + "\r", "900", true},
		{`{"jsonrpc":"2.0","id":901,"method":"tools/list","Method":"tools/call","params":{"name":"list_test_tasks"}}`, "901", false},
		{`{"jsonrpc":"2.0","id":902,"method":"tools/call","Method":"tools/list","params":{"name":"list_test_tasks"}}`, "902", true},
		{`{"jsonrpc":"2.0","id":903,"method":"tools/list","method":"tools/call","params":{"name":"list_test_tasks"}}`, "903", true},
		{`{"jsonrpc":"2.0","id":912.9,"method":"tools/call","params":{"name":"list_test_tasks"}}`, "912", true}, // the id the SDK reads: 912
		{`{"jsonrpc":"2.0","id":9.047e2,"method":"tools/call","params":{"name":"list_test_tasks"}}`, "904", true},
		{`{"jsonrpc":"2.0","id":"905","ID":1,"method":"tools/call","params":{"name":"list_test_tasks"},"result":{}}`, `"905"`, true},
		{`{"jsonrpc":"2.0","id":908,"method":"tools/call","params":{"name":"list_test_tasks"}` + "\n}", "908", true},
		{`{"jsonrpc":"2.0","id":909,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{"q":"\ud800"}}}`, "909", true},
		// A batch: the SDK answers it in one array (no id on the line).
		{`[{"jsonrpc":"2.0","id":910,"method":"tools/call","params":{"name":"list_test_tasks"}},{"jsonrpc":"2.0","id":911,"method":"ping"}]`, "", false},
	}
	var oddLines, oddIDs []string
	oddFast := 0
	for _, o := range odd {
		oddLines = append(oddLines, o.line)
		if o.id != "" {
			oddIDs = append(oddIDs, o.id)
		}
		if o.fast {
			oddFast++
		}
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"pipe","version":"1"}}}`
	steps := []stdioStep{
		// Before initialize: the SDK refuses the call, answers the ping.
		{lines: []string{call(`"early"`, `{"name":"list_test_tasks","arguments":{}}`), `{"jsonrpc":"2.0","id":"ping0","method":"ping"}`}, ids: []string{`"early"`, `"ping0"`}},
		{lines: []string{init}, ids: []string{"1"}},
		// No notifications/initialized yet: the SDK serves calls already.
		{lines: []string{call(`"pre-initialized"`, `{"name":"list_test_tasks","arguments":{}}`)}, ids: []string{`"pre-initialized"`}, fast: 1},
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":3,"method":"ping"}`}, ids: []string{"2", "3"}},
		{lines: calls, ids: ids, fast: fast},
		{lines: oddLines, ids: oddIDs, fast: oddFast},
		// A duplicate initialize changes nothing.
		{lines: []string{strings.Replace(init, `"id":1`, `"id":4`, 1)}, ids: []string{"4"}},
		// Cancellation of a call in flight: its answer is the tool's to
		// a cancelled context, on both paths.
		{lines: []string{call(`"block1"`, `{"name":"block_until_cancelled","arguments":{"tag":"a"}}`)}, block: "a", fast: 1},
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"block1","reason":"test"}}`}, ids: []string{`"block1"`}},
		// A second request with the id of a call in flight: dropped
		// (the SDK has no id to answer it with); then the first is
		// cancelled (by a numeric id).
		{lines: []string{call(`77`, `{"name":"block_until_cancelled","arguments":{"tag":"b"}}`)}, block: "b", fast: 1},
		{lines: []string{call(`77`, `{"name":"list_test_tasks","arguments":{}}`), `{"jsonrpc":"2.0","id":"after-dup","method":"ping"}`}, ids: []string{`"after-dup"`}},
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}`}, ids: []string{"77"}},
		// Cancelling what is not in flight does nothing.
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"early"}}`, `{"jsonrpc":"2.0","id":5,"method":"ping"}`}, ids: []string{"5"}},
	}
	// A first run through the SDK takes any state change (start_test_run
	// creates a run; the two compared runs then both replay it).
	runStdioScript(t, p, b, mcpserver.StdioOptions{NoFastPath: true}, steps)
	fastOut, fastNoID, served := runStdioScript(t, p, b, mcpserver.StdioOptions{}, steps)
	sdkOut, sdkNoID, sdkServed := runStdioScript(t, p, b, mcpserver.StdioOptions{NoFastPath: true}, steps)
	if sdkServed != 0 {
		t.Fatalf("the fast path served %d requests with NoFastPath", sdkServed)
	}
	if want := int64(fast + oddFast + 3); served != want {
		t.Errorf("the fast path served %d requests, want %d", served, want)
	}
	if len(fastOut) != len(sdkOut) {
		t.Errorf("%d replies with the fast path, %d without", len(fastOut), len(sdkOut))
	}
	for id, s := range sdkOut {
		if f := fastOut[id]; f != s {
			t.Errorf("id %s:\nfast path %.600s\nSDK       %.600s", id, f, s)
		}
	}
	if masked(strings.Join(fastNoID, "\n")) != masked(strings.Join(sdkNoID, "\n")) || len(sdkNoID) != 1 {
		t.Errorf("replies without an id:\nfast path %q\nSDK       %q", fastNoID, sdkNoID)
	}
	if !strings.Contains(sdkOut[`"early"`], `"error"`) {
		t.Errorf("a call before initialize: %s, want an error", sdkOut[`"early"`])
	}
}

// TestStdioFastPath2026IsByteEquivalent: the same for a 2026-07-28 client
// on stdio (no initialize; the _meta triple on every request), which the
// SDK serves in Duet's configuration: a call the SDK would refuse, and one
// before the SDK's session is initialized, go to the SDK.
func TestStdioFastPath2026IsByteEquivalent(t *testing.T) {
	t.Parallel()
	b := &blocker{started: make(chan string, 4)}
	p := newTwoPathsLimits(t, pipelined, b.tool())
	id := p.taskID
	const (
		version = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		caps    = `"io.modelcontextprotocol/clientCapabilities":{}`
		info    = `"io.modelcontextprotocol/clientInfo":{"name":"pipe","version":"1"}`
		triple  = version + `,` + caps + `,` + info
	)
	call := func(id, name, args, meta string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,"_meta":{` + meta + `}}}`
	}
	get := `{"taskId":"` + id + `"}`
	variants := []struct {
		name, args, meta string
		fast             bool
	}{
		{"get_test_task", get, triple, true},
		{"get_test_task", get, version + `,` + caps, true},
		{"get_test_task", get, triple + `,"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`, true},
		{"list_test_tasks", `{}`, triple, true},
		{"list_test_cases", `{"taskId":"` + id + `"}`, triple, true},
		{"get_test_task", `{"taskId":7}`, triple, true},
		{conformance.ToolMixed, `{}`, triple, true},
		{"get_test_task", get, triple + `,"progressToken":"p"`, false},
		{"get_test_task", get, triple + `,"io.modelcontextprotocol/logLevel":"debug"`, false},
		{"get_test_task", get, version + `,"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},` + info, false},
		{"get_test_task", get, version + `,` + info, false},                                             // no capabilities: the SDK refuses
		{"get_test_task", get, version + `,` + caps + `,"io.modelcontextprotocol/clientInfo":5`, false}, // refused too
		{"get_test_task", get, `"io.modelcontextprotocol/protocolVersion":"2027-01-01",` + caps, false},
		{"get_test_task", get, `"io.modelcontextprotocol/protocolVersion":"2025-06-18",` + caps, false},
		{"get_test_task", get, ``, false},
		{"start_test_run", `{"taskId":"` + id + `","idempotencyKey":"k"}`, triple, false},
		{"no_such_tool", `{}`, triple, false},
	}
	var calls, ids []string
	fast := 0
	for i, v := range variants {
		for j, idf := range []string{`%d`, `"s%d"`} {
			cid := fmt.Sprintf(idf, 100+2*i+j)
			calls = append(calls, call(cid, v.name, v.args, v.meta))
			ids = append(ids, cid)
			if v.fast {
				fast++
			}
		}
	}
	steps := []stdioStep{
		// Refused by the SDK: the session stays uninitialized.
		{lines: []string{call("1", "get_test_task", get, version+`,`+info)}, ids: []string{"1"}},
		// The first accepted request initializes the SDK's session: the
		// SDK answers it.
		{lines: []string{call("2", "get_test_task", get, triple)}, ids: []string{"2"}},
		{lines: []string{`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{` + triple + `}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{` + triple + `}}}`}, ids: []string{"3", "4"}},
		{lines: calls, ids: ids, fast: fast},
		{lines: []string{call(`"block"`, "block_until_cancelled", `{"tag":"m"}`, triple)}, block: "m", fast: 1},
		{lines: []string{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"block"}}`}, ids: []string{`"block"`}},
	}
	// A first run through the SDK takes any state change (start_test_run
	// creates a run; the two compared runs then both replay it).
	runStdioScript(t, p, b, mcpserver.StdioOptions{NoFastPath: true}, steps)
	fastOut, fastNoID, served := runStdioScript(t, p, b, mcpserver.StdioOptions{}, steps)
	sdkOut, sdkNoID, sdkServed := runStdioScript(t, p, b, mcpserver.StdioOptions{NoFastPath: true}, steps)
	if sdkServed != 0 {
		t.Fatalf("the fast path served %d requests with NoFastPath", sdkServed)
	}
	if want := int64(fast + 1); served != want {
		t.Errorf("the fast path served %d requests, want %d", served, want)
	}
	if len(fastOut) != len(sdkOut) || len(fastNoID)+len(sdkNoID) != 0 {
		t.Errorf("%d replies with the fast path (%d without id), %d without (%d)", len(fastOut), len(fastNoID), len(sdkOut), len(sdkNoID))
	}
	for id, s := range sdkOut {
		if f := fastOut[id]; f != s {
			t.Errorf("id %s:\nfast path %.600s\nSDK       %.600s", id, f, s)
		}
	}
	if !strings.Contains(sdkOut["100"], `"resultType":"complete"`) {
		t.Errorf("a 2026-07-28 result: %s, want resultType complete", sdkOut["100"])
	}
}

// TestStdioFastCallsAnsweredAtEndOfInput: a client that writes a burst of
// calls after the handshake and closes stdin at once gets every answer —
// the end of input waits for the fast path's calls as for the SDK's.
func TestStdioFastCallsAnsweredAtEndOfInput(t *testing.T) {
	t.Parallel()
	p := newTwoPathsLimits(t, pipelined)
	ss := startStdio(t, p.srv, mcpserver.StdioOptions{})
	ss.send([]string{"1"}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`)
	before := p.srv.FastPathServed()
	const n = 64
	var burst strings.Builder
	burst.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := range n {
		fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":%q}}}`+"\n", 100+i, p.taskID)
	}
	io.WriteString(ss.in, burst.String())
	ss.close() // closes stdin and waits for ServeStdio to return
	if got := p.srv.FastPathServed() - before; got != n {
		t.Errorf("the fast path served %d calls, want %d", got, n)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i := range n {
		l, ok := ss.byID[fmt.Sprint(100+i)]
		if !ok || !strings.Contains(l, `"caseCount":1`) {
			t.Errorf("call %d: got %q, want its result", 100+i, l)
		}
	}
}

// TestStdioFastPathGoSDKClient: the go-sdk's own client, of either era,
// over stdio gets its calls answered by the fast path, concurrently, with
// the right results, and the rest of the session (tools/list, a progress
// call) from the SDK.
func TestStdioFastPathGoSDKClient(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", "2025-06-18"} {
		t.Run("version "+version, func(t *testing.T) {
			t.Parallel()
			p := newTwoPathsLimits(t, pipelined)
			cr, sw := io.Pipe()
			sr, cw := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- p.srv.ServeStdio(t.Context(), duet.Caller{UserID: "alice"}, sr, sw) }()
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			cs, err := c.Connect(t.Context(), &mcp.IOTransport{Reader: cr, Writer: cw}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ListTools(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			before := p.srv.FastPathServed()
			const n = 32
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_test_task", Arguments: map[string]any{"taskId": p.taskID}})
					if err != nil {
						errs <- err
						return
					}
					b, _ := json.Marshal(res.StructuredContent)
					if res.IsError || !strings.Contains(string(b), p.taskID) {
						errs <- fmt.Errorf("call %d: %s", i, b)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if got := p.srv.FastPathServed() - before; got != n {
				t.Errorf("the fast path served %d of %d calls", got, n)
			}
			// A call with a progress token goes to the SDK.
			before = p.srv.FastPathServed()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_test_tasks", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "p"}})
			if err != nil || res.IsError {
				t.Fatalf("progress call: %v %v", res, err)
			}
			if p.srv.FastPathServed() != before {
				t.Error("the fast path served a call with a progress token")
			}
			cs.Close()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("ServeStdio did not return after the client closed")
			}
		})
	}
}

// TestStdioFastPathKeepsTheCaps: a fast call takes the caller's
// concurrency slot like any other — with one slot per caller, a second
// call while the first runs is refused RATE_LIMITED, by the fast path — and
// its caller is the session's, with Source stdio, in the audit record.
func TestStdioFastPathKeepsTheCaps(t *testing.T) {
	t.Parallel()
	b := &blocker{started: make(chan string, 4)}
	p := newTwoPathsLimits(t, catalog.Limits{MaxPerCaller: 1}, b.tool())
	ss := startStdio(t, p.srv, mcpserver.StdioOptions{})
	ss.send([]string{"1"}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`)
	before := p.srv.FastPathServed()
	io.WriteString(ss.in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block_until_cancelled","arguments":{"tag":"x"}}}`+"\n")
	select {
	case <-b.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the blocking call did not start")
	}
	ss.send([]string{"3"}, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`)
	ss.send([]string{"2"}, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	if got := p.srv.FastPathServed() - before; got != 2 {
		t.Errorf("the fast path served %d calls, want 2", got)
	}
	ss.mu.Lock()
	limited := ss.byID["3"]
	ss.mu.Unlock()
	if !strings.Contains(limited, `"isError":true`) || !strings.Contains(limited, "RATE_LIMITED") {
		t.Errorf("a second call with one slot: %s, want RATE_LIMITED", limited)
	}
	ss.close()
}

// TestStdioFastPathEndsAsTheSDK: a frame the SDK cannot read ends the
// session, with the fast path as without it — the same replies, the same
// error from ServeStdio.
func TestStdioFastPathEndsAsTheSDK(t *testing.T) {
	t.Parallel()
	p := newTwoPathsLimits(t, pipelined)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_test_tasks"}}`
	for _, bad := range []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{"q":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks"},"error":5}`,
		`{"jsonrpc":"1.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"list_test_tasks"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks"}} {"jsonrpc":"2.0","id":4,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_test_tasks"}`,
		`{not json}`,
	} {
		var outs [2]string
		var errs [2]string
		for i, o := range []mcpserver.StdioOptions{{}, {NoFastPath: true}} {
			sr, cw := io.Pipe()
			out := &collected{}
			done := make(chan error, 1)
			go func() { done <- p.srv.ServeStdioWith(t.Context(), duet.Caller{UserID: "alice"}, sr, out, o) }()
			io.WriteString(cw, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`+"\n")
			for !strings.Contains(out.text(), `"id":1,`) {
				time.Sleep(time.Millisecond)
			}
			io.WriteString(cw, call+"\n")
			for !strings.Contains(out.text(), `"id":2,`) {
				time.Sleep(time.Millisecond)
			}
			io.WriteString(cw, bad+"\n")
			cw.Close()
			select {
			case err := <-done:
				errs[i] = fmt.Sprint(err)
			case <-time.After(30 * time.Second):
				t.Fatalf("%.80s: the session did not end", bad)
			}
			outs[i] = newTraceRe.ReplaceAllString(out.text(), "")
		}
		if outs[0] != outs[1] || errs[0] != errs[1] {
			t.Errorf("%.80s:\nfast path %s %s\nSDK       %s %s", bad, outs[0], errs[0], outs[1], errs[1])
		}
	}
}

// FuzzStdioFastPathMatchesSDK writes the same bytes, after a handshake, to
// a session with the stdio fast path and to one without, closes stdin, and
// requires the same replies (trace ids the server makes up are masked) and
// the same end of ServeStdio. A first session through the SDK takes any
// state change (start_test_run creates a run; the two compared sessions
// then both replay it).
//
// The replies are compared as the SDK makes them (sameReplies): exactly,
// except where the SDK's own answer depends on timing — a request that
// reuses the id of an earlier one is dropped if that one is still in flight
// when it is read, and answered if it was answered already (seen: the SDK
// alone answers seed 7's ping 5 times in 40).
func FuzzStdioFastPathMatchesSDK(f *testing.F) {
	p := newTwoPathsLimits(f, pipelined)
	id := p.taskID
	const triple = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"f","version":"1"}}`
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"` + id + `"}}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"list_test_tasks","arguments":{"limit":1}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"start_test_run","arguments":{"taskId":"` + id + `","idempotencyKey":"k1"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + conformance.ToolMixed + `"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","Method":"tools/list","params":{"Name":"x","name":"list_test_tasks"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_test_tasks","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"list_test_tasks"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"a","taskId":"b"}}}` + "\n" + `{"jsonrpc":"2.0","id":8,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"list_test_tasks"}}]`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":"` + id + `"},` + triple + `}}`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"list_test_tasks"}} {"jsonrpc":"2.0","id":13,"method":"ping"}`,
		// Not a seed: a call cancelled as soon as it is sent. The SDK answers
		// "context canceled" when the cancellation overtakes the start of
		// its handler, and the tool's CANCELLED result otherwise; a fast
		// call has always started (TestStdioFastPathIsByteEquivalent
		// compares a cancellation of a call in flight).
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{"q":"` + "\xff" + `"}}}`,
		// A call and then a frame that is not JSON: the session ends on the
		// read error and the call in flight is answered by neither path
		// (the SDK writes nothing once its read side has failed). Also in
		// testdata, as the fuzzer found it.
		`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"list_test_tasks"}}` + "\n" + `{not json}`,
	} {
		f.Add(s)
	}
	session := func(t *testing.T, o mcpserver.StdioOptions, input string) ([]string, string) {
		sr, cw := io.Pipe()
		out := &collected{}
		done := make(chan error, 1)
		go func() { done <- p.srv.ServeStdioWith(t.Context(), duet.Caller{UserID: "alice"}, sr, out, o) }()
		io.WriteString(cw, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`+"\n")
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.text(), `"id":"init"`); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no answer to initialize")
			}
		}
		go func() {
			io.WriteString(cw, input+"\n")
			cw.Close()
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%q: the session did not end", input)
		}
		sr.Close()
		return strings.Split(newTraceRe.ReplaceAllString(out.text(), ""), "\n"), fmt.Sprint(err)
	}
	f.Fuzz(func(t *testing.T, input string) {
		session(t, mcpserver.StdioOptions{NoFastPath: true}, input)
		fastOut, fastErr := session(t, mcpserver.StdioOptions{}, input)
		sdkOut, sdkErr := session(t, mcpserver.StdioOptions{NoFastPath: true}, input)
		if fastErr != sdkErr {
			t.Errorf("%q: ServeStdio returned %s with the fast path, %s without", input, fastErr, sdkErr)
		}
		if d := sameReplies(input, fastOut, sdkOut, sdkErr != "<nil>"); d != "" {
			t.Errorf("%q: %s", input, d)
		}
	})
}

// sameReplies compares the reply lines of a session with the fast path
// (fast) and of one without (sdk) for the same input, and says how they
// differ ("" when they do not). Lines are compared as multisets (replies of
// concurrent calls come in any order), exactly — except the replies to an
// id that the input uses for more than one request. The SDK's JSON-RPC
// connection drops a request whose id is still in flight (jsonrpc2's
// acceptRequest: "request ID already in use", sent without an id, so not at
// all) and answers it once the earlier one was answered, and which of the
// two happens depends on how far the earlier call got when the later one is
// read: a race inside the SDK, not a choice of the fast path. For such an
// id, each path must answer at least once, and one path's replies must be
// among the other's: the same answer to the first request, and the same
// answer to any later one both answered.
//
// failed says the session ended on a stream error (a frame that is not
// JSON, one too long): the SDK's connection then writes no reply of a call
// still in flight, and the fast path drops its own from the same point (the
// frame the stream failed at), but whether a call was answered before that
// is a race between the call and the reading of the stream, on either
// path. So a reply may then be missing on either side; the replies both
// sent must be the same.
func sameReplies(input string, fast, sdk []string, failed bool) string {
	reused := reusedIDs(input)
	if failed {
		for _, l := range append(slices.Clone(fast), sdk...) {
			if k, ok := replyID(l); ok {
				reused[k] = true // compared by id, as a reused id is
			}
		}
	}
	type split struct {
		exact []string
		byID  map[string][]string
	}
	group := func(lines []string) split {
		s := split{byID: map[string][]string{}}
		for _, l := range lines {
			if k, ok := replyID(l); ok && reused[k] {
				s.byID[k] = append(s.byID[k], l)
				continue
			}
			s.exact = append(s.exact, l)
		}
		slices.Sort(s.exact)
		return s
	}
	f, s := group(fast), group(sdk)
	var diff []string
	for i := range max(len(f.exact), len(s.exact)) {
		var a, b string
		if i < len(f.exact) {
			a = f.exact[i]
		}
		if i < len(s.exact) {
			b = s.exact[i]
		}
		if a != b {
			diff = append(diff, fmt.Sprintf("reply %d:\nfast path %s\nSDK       %s", i, a, b))
		}
	}
	for k := range reused {
		a, b := f.byID[k], s.byID[k]
		missing := len(a) == 0 || len(b) == 0
		if failed && missing {
			continue // not answered before the stream failed, on one path
		}
		if missing || !subMultiset(a, b) && !subMultiset(b, a) {
			diff = append(diff, fmt.Sprintf("replies to the reused id %s:\nfast path %q\nSDK       %q", k, a, b))
		}
	}
	return strings.Join(diff, "\n")
}

// reusedIDs returns the ids (as idKey writes them) that the input's
// requests use more than once, reading the frames as far as they are JSON.
func reusedIDs(input string) map[string]bool {
	seen, reused := map[string]bool{}, map[string]bool{}
	note := func(raw json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || m["method"] == nil || m["id"] == nil {
			return
		}
		var v any
		if json.Unmarshal(m["id"], &v) != nil {
			return
		}
		if k, ok := idKey(v); ok {
			reused[k] = reused[k] || seen[k]
			seen[k] = true
		}
	}
	dec := json.NewDecoder(strings.NewReader(input))
	for {
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			break
		}
		var batch []json.RawMessage
		if json.Unmarshal(raw, &batch) == nil {
			for _, r := range batch {
				note(r)
			}
			continue
		}
		note(raw)
	}
	for k, r := range reused {
		if !r {
			delete(reused, k)
		}
	}
	return reused
}

// idKey is a request or reply id as the SDK compares them (jsonrpc.MakeID:
// a number is its integer part; a string is itself).
func idKey(v any) (string, bool) {
	switch v := v.(type) {
	case float64:
		return fmt.Sprint(int64(v)), true
	case string:
		return strconv.Quote(v), true
	}
	return "", false
}

// replyID is the id of a reply line.
func replyID(line string) (string, bool) {
	var m struct {
		ID any `json:"id"`
	}
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &m) != nil {
		return "", false
	}
	return idKey(m.ID)
}

// subMultiset reports whether every line of a is in b, as often.
func subMultiset(a, b []string) bool {
	n := map[string]int{}
	for _, l := range b {
		n[l]++
	}
	for _, l := range a {
		if n[l]--; n[l] < 0 {
			return false
		}
	}
	return true
}

// TestStdioFastPathMixedEras: what the SDK answers depends on the version
// it records for the session — the one the client asked for in initialize
// (not the negotiated one), or the first 2026-07-28 request's: a tool
// result is marked final (resultType) when that is 2026-07-28 or later,
// and a 2026-07-28 request's result carries serverInfo. The fast path
// answers the same in each combination.
func TestStdioFastPathMixedEras(t *testing.T) {
	t.Parallel()
	b := &blocker{started: make(chan string, 1)}
	p := newTwoPathsLimits(t, pipelined, b.tool())
	const triple = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	plain := `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"list_test_tasks"}}`
	modern := `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"list_test_tasks",` + triple + `}}`
	for _, version := range []string{"2025-06-18", "2026-07-28", "2099-01-01"} {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`
		steps := []stdioStep{{lines: []string{init}, ids: []string{"1"}}, {lines: []string{plain, modern}, ids: []string{"10", "11"}, fast: 2}}
		fastOut, _, served := runStdioScript(t, p, b, mcpserver.StdioOptions{}, steps)
		sdkOut, _, _ := runStdioScript(t, p, b, mcpserver.StdioOptions{NoFastPath: true}, steps)
		if served != 2 {
			t.Errorf("initialize %s: the fast path served %d calls, want 2", version, served)
		}
		for id, s := range sdkOut {
			if f := fastOut[id]; f != s {
				t.Errorf("initialize %s, id %s:\nfast path %.400s\nSDK       %.400s", version, id, f, s)
			}
		}
	}
}

// TestStdioFastPathDropsRepliesAtAFailedStream: a call still running when
// the client's stream fails (a frame that is not JSON) is answered by
// neither path — the SDK's connection writes nothing once its read side has
// failed, and the fast path drops its call's reply from the same frame on
// (it answered CANCELLED) — and the session ends alike.
func TestStdioFastPathDropsRepliesAtAFailedStream(t *testing.T) {
	t.Parallel()
	b := &blocker{started: make(chan string, 1)}
	p := newTwoPathsLimits(t, pipelined, b.tool())
	var outs, errs [2]string
	for i, o := range []mcpserver.StdioOptions{{}, {NoFastPath: true}} {
		sr, cw := io.Pipe()
		out := &collected{}
		done := make(chan error, 1)
		before := p.srv.FastPathServed()
		go func() { done <- p.srv.ServeStdioWith(t.Context(), duet.Caller{UserID: "alice"}, sr, out, o) }()
		io.WriteString(cw, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`+"\n")
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.text(), `"id":1,`); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("no answer to initialize")
			}
		}
		io.WriteString(cw, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block_until_cancelled","arguments":{"tag":"x"}}}`+"\n")
		select {
		case <-b.started:
		case <-time.After(30 * time.Second):
			t.Fatal("the call did not start")
		}
		io.WriteString(cw, "{not json}\n")
		cw.Close()
		select {
		case err := <-done:
			errs[i] = fmt.Sprint(err)
		case <-time.After(30 * time.Second):
			t.Fatal("the session did not end")
		}
		if served := p.srv.FastPathServed() - before; served != int64(1-i) {
			t.Errorf("fast path on=%v: it served %d calls", i == 0, served)
		}
		outs[i] = newTraceRe.ReplaceAllString(out.text(), "")
		if strings.Contains(outs[i], `"id":2`) {
			t.Errorf("fast path on=%v: the call in flight was answered after the stream failed:\n%s", i == 0, outs[i])
		}
	}
	if outs[0] != outs[1] || errs[0] != errs[1] {
		t.Errorf("fast path %s %s\nSDK       %s %s", outs[0], errs[0], outs[1], errs[1])
	}
}

// collected is the stdout of ServeStdio.
type collected struct {
	mu sync.Mutex
	strings.Builder
}

func (c *collected) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Builder.Write(p)
}

func (c *collected) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Builder.String()
}

func (*collected) Close() error { return nil }

// TestStdioRequestBeforeInitialize: a request other than ping sent before
// initialize is refused with a JSON-RPC error that has a code — -32600,
// the SDK's own code for a request that is not valid (the SDK words the
// refusal as a plain error, which its JSON-RPC layer would send with code
// 0) — and the SDK's message; the same bytes with the fast path and
// without; the ping is answered and the session goes on.
func TestStdioRequestBeforeInitialize(t *testing.T) {
	t.Parallel()
	p := newTwoPathsLimits(t, pipelined)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_test_tasks","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":"r","method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}
	var outs [2]string
	for i, o := range []mcpserver.StdioOptions{{}, {NoFastPath: true}} {
		in := io.NopCloser(strings.NewReader(strings.Join(lines, "\n") + "\n"))
		out := &collected{}
		if err := p.srv.ServeStdioWith(t.Context(), duet.Caller{UserID: "alice"}, in, out, o); err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
		outs[i] = out.text()
	}
	if outs[0] != outs[1] {
		t.Errorf("fast path:\n%s\nSDK:\n%s", outs[0], outs[1])
	}
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"method \"tools/list\" is invalid during session initialization"}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"method \"tools/call\" is invalid during session initialization"}}`,
		`{"jsonrpc":"2.0","id":"r","error":{"code":-32600,"message":"method \"resources/list\" is invalid during session initialization"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	} {
		if !strings.Contains(outs[0], want+"\n") {
			t.Errorf("no %s in\n%s", want, outs[0])
		}
	}
}
