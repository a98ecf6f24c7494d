package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The load matrix: every target (Duet governed, bare go-sdk, bare mcp-go,
// the floor) answering get_test_task at each concurrency of -cs, over each
// transport: Streamable HTTP with a 2025-11-25 client, Streamable HTTP with
// a 2026-07-28 client (no session, the _meta triple and the Mcp-* headers),
// and stdio (one process per target, requests pipelined on one pipe).
// Each cell runs for -d after -warmup; each server is one process whose
// CPU time (/proc) over the measured window, divided by the calls, is the
// CPU per call.

// transport is how the load generator talks to a target.
type transport struct {
	key   string // -transports
	name  string // table heading
	era   string // HTTP: the protocol version the client speaks
	stdio bool
}

var transports = []transport{
	{key: "http-2025", name: "Streamable HTTP, 2025-11-25 client", era: "2025-11-25"},
	{key: "http-2026", name: "Streamable HTTP, 2026-07-28 client", era: "2026-07-28"},
	{key: "stdio", name: "stdio", stdio: true},
}

var targetNames = map[string]string{"duet": "duet (governed)", "gosdk": "go-sdk (bare)", "mcpgo": "mcp-go (bare)", "floor": "floor"}

// caller sends one get_test_task call and reports whether a good result
// came back.
type caller interface {
	call(id int64) bool
}

// httpCaller posts stateless requests of one protocol era.
type httpCaller struct {
	url, body, era string
}

func (h httpCaller) call(int64) bool {
	req, _ := http.NewRequest("POST", h.url, strings.NewReader(h.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", h.era)
	if h.era >= "2026-07-28" {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "get_test_task")
	}
	req.Header.Set("X-Api-Key", gatewayKey)
	req.Header.Set("SSO-Emp-Id", "alice")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return err == nil && resp.StatusCode == 200 && goodResult(b)
}

func goodResult(b []byte) bool {
	return bytes.Contains(b, []byte(`"structuredContent"`)) && !bytes.Contains(b, []byte(`"isError":true`))
}

// eraBody is a tools/call of get_test_task for taskID as a client of era
// sends it.
func eraBody(era, taskID string) string {
	meta := ""
	if era >= "2026-07-28" {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":%q}%s}}`, taskID, meta)
}

// stdioCaller pipelines calls on one stdio connection: each call writes a
// line with its own id and waits for the reply with that id.
type stdioCaller struct {
	taskID  string
	mu      sync.Mutex // writes
	w       io.Writer
	pmu     sync.Mutex
	pending map[int64]chan []byte
}

func newStdioCaller(p *proc, stdin io.Writer, stdout io.Reader, taskID string) *stdioCaller {
	s := &stdioCaller{taskID: taskID, w: stdin, pending: map[int64]chan []byte{}}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			line := slices.Clone(sc.Bytes())
			if json.Unmarshal(line, &m) != nil || m.ID == nil {
				continue
			}
			id, err := strconv.ParseInt(string(m.ID), 10, 64)
			if err != nil {
				continue
			}
			s.pmu.Lock()
			ch := s.pending[id]
			delete(s.pending, id)
			s.pmu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}()
	// The handshake.
	if b := s.send(0, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`); b == nil {
		log.Fatalf("%s: no answer to initialize", p.cmd.Path)
	}
	s.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *stdioCaller) write(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, line+"\n")
}

func (s *stdioCaller) send(id int64, line string) []byte {
	ch := make(chan []byte, 1)
	s.pmu.Lock()
	s.pending[id] = ch
	s.pmu.Unlock()
	s.write(line)
	select {
	case b := <-ch:
		return b
	case <-time.After(30 * time.Second):
		return nil
	}
}

func (s *stdioCaller) call(id int64) bool {
	b := s.send(id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_test_task","arguments":{"taskId":%q}}}`, id, s.taskID))
	return b != nil && goodResult(b)
}

// startStdio starts cmd with pipes and returns the process and a caller.
func startStdio(cmd *exec.Cmd, taskID string) (*proc, caller) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	p.stdin = stdin
	return p, newStdioCaller(p, stdin, stdout, taskID)
}

// drive runs c clients calling for d and returns latencies and errors.
func drive(cl caller, c int, d time.Duration, ids *atomic.Int64) ([]time.Duration, int) {
	return driveEach(c, d, func(int) bool { return cl.call(ids.Add(1)) })
}

// driveEach runs c clients for d, client i calling call(i) again and again,
// and returns the latencies of the calls that succeeded and how many failed.
func driveEach(c int, d time.Duration, call func(client int) bool) ([]time.Duration, int) {
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	stopAt := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := range c {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(stopAt) {
				t0 := time.Now()
				if !call(i) {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, int(errs.Load())
}

// cell measures one target at concurrency c.
func cell(name string, p *proc, cl caller, c int, ids *atomic.Int64) loadResult {
	drive(cl, c, *warm, ids)
	c0, t0 := p.cpu(), time.Now()
	lat, errs := drive(cl, c, *dur, ids)
	r := loadResult{name: name, n: len(lat), errs: errs, elapsed: time.Since(t0), cpu: p.cpu() - c0}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.p50, r.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return r
}

func (r loadResult) perCall() time.Duration {
	if r.n == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.n)
}

// matrix is every cell of the load matrix: transport key → target →
// concurrency.
type matrix map[string]map[string]map[int]loadResult

// matrixTable runs the load matrix and prints one table per transport.
func matrixTable(home string) matrix {
	levels := []int{}
	for _, f := range strings.Split(*concList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("-cs: %q", f)
		}
		levels = append(levels, n)
	}
	all := matrix{}
	fmt.Printf("\n## get_test_task under load: %s per cell after %s warm-up; every server a separate process on this machine\n", *dur, *warm)
	a := openApp(home, nil)
	taskOfDuet := taskID0(a)
	a.Close()
	var ids atomic.Int64
	for _, tr := range transports {
		if !slices.Contains(strings.Split(*onlyTr, ","), tr.key) {
			continue
		}
		res := map[string]map[int]loadResult{}
		for _, t := range strings.Split(*targets, ",") {
			var p *proc
			var cl caller
			switch {
			case t == "duet" && tr.stdio:
				cmd := exec.Command(*duetBin, "mcp")
				cmd.Env = append(os.Environ(), "DUET_HOME="+home, "DUET_USER=alice", "DUET_MAX_PER_CALLER=1024", "DUET_MAX_CONCURRENT=1024")
				if *duetEnv != "" {
					cmd.Env = append(cmd.Env, strings.Split(*duetEnv, ",")...)
				}
				p, cl = startStdio(cmd, taskOfDuet)
			case t == "duet":
				p = startDuet(home)
				cl = httpCaller{url: p.url, era: tr.era, body: eraBody(tr.era, taskOfDuet)}
			case tr.stdio:
				p, cl = startStdio(exec.Command(*benchBin, "-kind", t, "-stdio"), "task_bench")
			default:
				p = startBench(t)
				cl = httpCaller{url: p.url, era: tr.era, body: eraBody(tr.era, "task_bench")}
			}
			res[t] = map[int]loadResult{}
			for _, c := range levels {
				res[t][c] = cell(targetNames[t], p, cl, c, &ids)
			}
			p.stop()
		}
		all[tr.key] = res
		fmt.Printf("\n### %s\n\n", tr.name)
		fmt.Println("| server | c | req/s | p50 | p99 | errors | server CPU/call | req/s ÷ mcp-go | req/s ÷ go-sdk | p99 ÷ floor's |")
		fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, c := range levels {
			for _, t := range strings.Split(*targets, ",") {
				r := res[t][c]
				ratio := func(k string, f func(loadResult) float64) string {
					ref, ok := res[k][c]
					if !ok || f(ref) == 0 || f(r) == 0 {
						return "–"
					}
					return fmt.Sprintf("%.2fx", f(r)/f(ref))
				}
				rps := func(x loadResult) float64 { return x.rps() }
				p99 := func(x loadResult) float64 { return float64(x.p99) }
				fmt.Printf("| %s | %d | %.0f | %s | %s | %d | %s | %s | %s | %s |\n", r.name, c, r.rps(), round(r.p50), round(r.p99), r.errs, round(r.perCall()),
					ratio("mcpgo", rps), ratio("gosdk", rps), ratio("floor", p99))
			}
		}
	}
	return all
}
