// Command chromeprof reads a Chromium trace (JSON trace file, as
// browser.Pool.TraceChromium writes it; BenchmarkBrowserCaseCPU with
// DUET_BENCH_CHROMIUM_TRACE) and prints where Chromium's CPU went, per case:
//
//   - each thread of each kind of process: the CPU time (tdur) of its
//     top-level tasks;
//   - the tasks by what posted them (src_func) and the first slice inside
//     them;
//   - the IPC messages each thread received, by interface (mojom category);
//   - the protocol commands the renderers ran (api_call) and the browser
//     process handled (devtools category), with their CPU each.
//
// Usage:
//
//	cd bench && go run ./cmd/chromeprof -cases 20 /tmp/chromium-trace.json
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
)

type event struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  int64          `json:"pid"`
	Tid  int64          `json:"tid"`
	Ts   int64          `json:"ts"`
	Dur  *int64         `json:"dur"`
	TDur *int64         `json:"tdur"`
	Args map[string]any `json:"args"`
}

// cpu is a slice's thread time in µs, or its wall time when the trace has
// no thread time for it.
func (e *event) cpu() int64 {
	if e.TDur != nil {
		return *e.TDur
	}
	return *e.Dur
}

type thread struct{ pid, tid int64 }

func main() {
	cases := flag.Float64("cases", 1, "the cases the trace covers: the figures are per case")
	top := flag.Int("top", 25, "rows per table")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: chromeprof [-cases N] [-top N] trace.json")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *cases <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdout, flag.Arg(0), *cases, *top); err != nil {
		fmt.Fprintln(os.Stderr, "chromeprof:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, path string, cases float64, top int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var trace struct {
		TraceEvents []event `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &trace); err != nil {
		return fmt.Errorf("%s: not a JSON trace file: %w", path, err)
	}
	procs, threads := map[int64]string{}, map[thread]string{}
	slicesOf := map[thread][]*event{}
	for i := range trace.TraceEvents {
		e := &trace.TraceEvents[i]
		name, _ := e.Args["name"].(string)
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			procs[e.Pid] = name
		case e.Ph == "M" && e.Name == "thread_name":
			threads[thread{e.Pid, e.Tid}] = name
		case e.Ph == "X" && e.Dur != nil:
			k := thread{e.Pid, e.Tid}
			slicesOf[k] = append(slicesOf[k], e)
		}
	}
	if len(slicesOf) == 0 {
		return fmt.Errorf("%s: no complete slices (ph X): was the trace recorded with the toplevel category?", path)
	}
	label := func(k thread) string {
		return cmp.Or(procs[k.pid], fmt.Sprint(k.pid)) + " / " + cmp.Or(threads[k], fmt.Sprint(k.tid))
	}
	perThread, perTask := map[string]int64{}, map[string]int64{}
	mojo, mojoN := map[string]int64{}, map[string]int{}
	cmds, cmdsN := map[string]int64{}, map[string]int{}
	for k, es := range slicesOf {
		th := label(k)
		slices.SortFunc(es, func(a, b *event) int { return cmp.Or(cmp.Compare(a.Ts, b.Ts), cmp.Compare(*b.Dur, *a.Dur)) })
		var outer *event // the top-level slice that contains the ones after it
		var firstChild bool
		for _, e := range es {
			switch {
			case outer == nil || e.Ts >= outer.Ts+*outer.Dur:
				outer, firstChild = e, true
				perThread[th] += e.cpu()
			case firstChild:
				// The task's first slice inside it names what it did.
				firstChild = false
				src, _ := outer.Args["src_func"].(string)
				perTask[th+"\t"+cmp.Or(src, outer.Name)+"\t"+e.Name] += outer.cpu()
			}
			switch e.Name {
			case "Receive mojo message":
				info, _ := e.Args["chrome_mojo_event_info"].(map[string]any)
				tag, _ := info["mojo_interface_tag"].(string)
				mojo[th+"\t"+cmp.Or(tag, "?")] += e.cpu()
				mojoN[th+"\t"+cmp.Or(tag, "?")]++
			case "api_call": // a renderer runs a protocol command
				m, _ := e.Args["method_name"].(string)
				cmds["renderer\t"+m] += e.cpu()
				cmdsN["renderer\t"+m]++
			case "DevToolsSession::HandleCommand in Browser":
				m, _ := e.Args["method"].(string)
				cmds["browser\t"+m] += e.cpu()
				cmdsN["browser\t"+m]++
			}
		}
	}
	ms := func(us int64) float64 { return float64(us) / 1e3 / cases }
	var total int64
	for _, v := range perThread {
		total += v
	}
	fmt.Fprintf(w, "## Chromium's CPU by thread, per case (%.0f cases; %.1f ms a case in all)\n\n| process / thread | ms per case |\n|---|---:|\n", cases, ms(total))
	for _, k := range byValue(perThread, top) {
		fmt.Fprintf(w, "| %s | %.1f |\n", k, ms(perThread[k]))
	}
	fmt.Fprintf(w, "\n## Tasks (what posted them, and the first slice in them), per case\n\n| process / thread | task | first slice | ms per case |\n|---|---|---|---:|\n")
	for _, k := range byValue(perTask, top) {
		f := strings.Split(k, "\t")
		fmt.Fprintf(w, "| %s | %s | %s | %.1f |\n", f[0], f[1], f[2], ms(perTask[k]))
	}
	if len(mojo) > 0 {
		fmt.Fprintf(w, "\n## IPC messages received, by interface, per case\n\n| process / thread | interface | messages | ms per case |\n|---|---|---:|---:|\n")
		for _, k := range byValue(mojo, top) {
			f := strings.Split(k, "\t")
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f |\n", f[0], f[1], float64(mojoN[k])/cases, ms(mojo[k]))
		}
	}
	if len(cmds) > 0 {
		fmt.Fprintf(w, "\n## Protocol commands, per case\n\n| where | command | calls | ms per case | ms each |\n|---|---|---:|---:|---:|\n")
		for _, k := range byValue(cmds, top) {
			f := strings.Split(k, "\t")
			fmt.Fprintf(w, "| %s | %s | %.1f | %.2f | %.2f |\n", f[0], f[1], float64(cmdsN[k])/cases, ms(cmds[k]), float64(cmds[k])/1e3/float64(cmdsN[k]))
		}
	}
	return nil
}

// byValue returns the keys of m with the largest values first, at most n.
func byValue(m map[string]int64, n int) []string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int { return cmp.Or(cmp.Compare(m[b], m[a]), strings.Compare(a, b)) })
	return keys[:min(n, len(keys))]
}
