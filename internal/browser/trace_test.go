package browser

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet/internal/trace"
)

// tracePage has a button whose click asks an API that answers 500; the
// page logs the failure and throws.
const tracePage = `<!doctype html><html><head><meta charset="utf-8"><title>Trace</title>
<style>#label { color: rgb(200, 0, 0) }</style></head><body>
<h1 id="label" onclick="alert(1)">Orders</h1><input id="q" value=""><a id="bad" href="javascript:alert(2)">x</a>
<button id="load">Load</button><p id="out">idle</p>
<script>
document.getElementById('load').addEventListener('click', async () => {
  const r = await fetch('/api/orders?fail=1', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Token': 'tok-123456'}, body: '{"page":1}'});
  const t = await r.text();
  document.getElementById('out').textContent = 'status ' + r.status;
  console.error('orders failed:', r.status, t);
  setTimeout(() => { throw new Error('render blew up'); }, 0);
});
</script></body></html>`

// TestSessionTrace: a recording holds screencast frames, a mark per step
// with its screenshots and DOM (scripts, handlers and javascript: URLs
// stripped, form values and styles in), the console error and the
// uncaught exception, and the failing request with its status, timing and
// body.
func TestSessionTrace(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, tracePage)
		case "/api/orders":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"code":"INTERNAL","message":"database down"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(site.Close)
	s := newSession(t, p, "")
	ctx := testCtx(t, 60*time.Second)
	if err := s.StartTrace(ctx, trace.RecordOptions{}); err != nil {
		t.Fatal(err)
	}
	s.TraceStepBegin(0)
	open(t, s, site, "/")
	s.TraceStepEnd(ctx, 0, true, false)
	// The screencast runs a moment behind the page: the step's screenshot
	// after it is the next frame that comes, else the frame the page shows
	// when the next step begins (its screenshot before). A page that does
	// not change sends no next frame: the test waits for the screencast's
	// first frame, which the page's load paints, not for a further one
	// that a still page may never send (under load the loaded page's frame
	// came before step 0 ended, and none after).
	waitFor(t, func() bool {
		r := s.rec.Load()
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.frames) > 0 || r.pending != nil
	})
	s.TraceStepBegin(1)
	if r := s.rec.Load(); r != nil {
		r.mu.Lock()
		after, before := r.marks[0].After, r.marks[1].Before
		r.mu.Unlock()
		if after < 0 || before < 0 {
			t.Fatalf("when step 1 began: step 0's screenshot after %d, step 1's before %d; want both", after, before)
		}
	}
	if err := s.Fill(ctx, "#q", "A1001"); err != nil {
		t.Fatal(err)
	}
	if err := s.Click(ctx, "#load"); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#out", Text: "status 500"}); err != nil {
		t.Fatal(err)
	}
	s.TraceStepEnd(ctx, 1, true, true)
	// The uncaught error comes a moment later.
	waitFor(t, func() bool {
		r := s.rec.Load()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, l := range r.console {
			if l.Type == "exception" {
				return true
			}
		}
		return false
	})
	c := s.StopTrace(ctx, true)
	if c == nil {
		t.Fatal("no capture")
	}
	if s.StopTrace(ctx, true) != nil {
		t.Error("a second StopTrace returned a capture")
	}
	if len(c.Frames) == 0 || len(c.Marks) != 2 {
		t.Fatalf("frames %d, marks %d", len(c.Frames), len(c.Marks))
	}
	for _, m := range c.Marks {
		if m.After < 0 || m.EndMs < m.StartMs || len(m.DOM) == 0 || !strings.HasPrefix(m.URL, site.URL) {
			t.Errorf("mark %d: after %d, %d..%d ms, DOM %d bytes, URL %q (%s)", m.Index, m.After, m.StartMs, m.EndMs, len(m.DOM), m.URL, m.DOMNote)
		}
	}
	if cfg, err := jpeg.DecodeConfig(bytes.NewReader(c.Frames[c.Marks[1].After].Data)); err != nil || cfg.Width != s.device.Width {
		t.Errorf("the screenshot after step 1: %v %+v, want a JPEG %d pixels wide", err, cfg, s.device.Width)
	}
	// The screencast's frames are at trace.DefaultFramePercent of the
	// viewport; the step's own screenshot above is at full size.
	want := s.device.Width * trace.DefaultFramePercent / 100
	if cfg, err := jpeg.DecodeConfig(bytes.NewReader(c.Frames[c.Marks[0].After].Data)); err != nil || cfg.Width < want-1 || cfg.Width > want+1 {
		t.Errorf("the frame after step 0: %v %+v, want a JPEG %d pixels wide", err, cfg, want)
	}
	if c.Marks[1].Before < 0 {
		t.Errorf("step 1 has no screenshot before it")
	}
	dom := string(c.Marks[1].DOM)
	for _, bad := range []string{"<script", "onclick", "javascript:", "addEventListener"} {
		if strings.Contains(dom, bad) {
			t.Errorf("the DOM snapshot holds %q", bad)
		}
	}
	for _, want := range []string{`value="A1001"`, "status 500", "rgb(200, 0, 0)", "<h1"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM snapshot lacks %q:\n%s", want, dom)
		}
	}
	var sawError, sawException bool
	for _, l := range c.Console {
		sawError = sawError || (l.Type == "error" && strings.Contains(l.Text, "orders failed: 500") && strings.Contains(l.Text, "database down"))
		sawException = sawException || (l.Type == "exception" && strings.Contains(l.Text, "render blew up"))
	}
	if !sawError || !sawException {
		t.Errorf("console: error %v, exception %v: %+v", sawError, sawException, c.Console)
	}
	var api *trace.Request
	for i := range c.Network {
		if strings.Contains(c.Network[i].URL, "/api/orders") {
			api = &c.Network[i]
		}
	}
	if api == nil {
		t.Fatalf("no API request in %+v", c.Network)
	}
	if api.Status != 500 || api.Method != "POST" || api.Type != "Fetch" || api.PostData != `{"page":1}` || !strings.Contains(api.Body, "database down") ||
		api.DurationMs <= 0 || api.EncodedBytes <= 0 || api.RequestHeaders["X-Token"] != "tok-123456" {
		t.Errorf("API request: %+v", *api)
	}
	if api.AtMs < c.Marks[1].StartMs {
		t.Errorf("the API request at %d ms is before step 1 began at %d ms", api.AtMs, c.Marks[1].StartMs)
	}
}

// TestSessionTraceUnkept: a recording stopped without keeping returns
// nothing, and the session goes on.
func TestSessionTraceUnkept(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "")
	ctx := testCtx(t, 60*time.Second)
	if err := s.StartTrace(ctx, trace.RecordOptions{}); err != nil {
		t.Fatal(err)
	}
	s.TraceStepBegin(0)
	open(t, s, site, "/")
	s.TraceStepEnd(ctx, 0, true, true)
	if c := s.StopTrace(ctx, false); c != nil {
		t.Errorf("an unkept trace returned %+v", c)
	}
	if _, err := s.Title(ctx); err != nil {
		t.Errorf("the session after its trace: %v", err)
	}
}

// TestSessionTraceWithoutReplay: a recording with NoReplay runs no
// screencast (no frame, no screenshot before or after a step) but keeps
// each step's DOM; past MaxDOMTotalBytes it lets go of the first steps'
// snapshots and keeps the last ones, and says how many it dropped.
func TestSessionTraceWithoutReplay(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := newSite(t)
	s := newSession(t, p, "")
	ctx := testCtx(t, 60*time.Second)
	if err := s.StartTrace(ctx, trace.RecordOptions{NoReplay: true}); err != nil {
		t.Fatal(err)
	}
	s.TraceStepBegin(0)
	open(t, s, site, "/")
	s.TraceStepEnd(ctx, 0, true, false)
	r := s.rec.Load()
	r.mu.Lock()
	one := len(r.marks[0].DOM)
	// Room for two snapshots and a half: five steps keep the last two.
	r.opts.MaxDOMTotalBytes = int64(one * 5 / 2)
	r.mu.Unlock()
	if one == 0 {
		t.Fatal("no DOM after step 0")
	}
	for i := 1; i < 5; i++ {
		s.TraceStepBegin(i)
		s.TraceStepEnd(ctx, i, true, false)
	}
	c := s.StopTrace(ctx, true)
	if c == nil || !c.NoReplay || len(c.Frames) != 0 {
		t.Fatalf("the capture: %+v", c)
	}
	for i, m := range c.Marks {
		if kept := m.DOM != nil; kept != (i >= 3) || m.Before >= 0 || m.After >= 0 {
			t.Errorf("step %d: DOM kept %v (want %v), screenshots before %d after %d (want none)", i, kept, i >= 3, m.Before, m.After)
		}
	}
	if c.DroppedSnapshots != 3 {
		t.Errorf("dropped %d snapshots, want 3", c.DroppedSnapshots)
	}
	_, tr, err := trace.Build(trace.Meta{Steps: []trace.StepInfo{{Index: 0}, {Index: 4}}}, c, nil, 0)
	if err != nil || tr.Cut == nil || tr.Cut.Snapshots != 3 || !strings.Contains(tr.Cut.Reason, "3 early steps") {
		t.Errorf("the trace does not say it lost 3 snapshots: %v %+v", err, tr.Cut)
	}
}

// waitFor waits up to 20 s for cond, checking it every 20 ms.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	// A bound for an event that comes, generous for a loaded machine.
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the recording")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTraceFrameRate: the screencast sends no more frames than the replay
// keeps — FPS a second, as the acknowledgements pace it — however often an
// animated page repaints (each frame the browser captures and encodes is a
// cost to the page); a step that ends still gets its screenshot after it
// at once, from the next frame.
func TestTraceFrameRate(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, htmlPage("Spin", `<style>@keyframes spin { to { transform: rotate(360deg) } }
#spin { width: 80px; height: 80px; background: #36c; animation: spin .5s linear infinite }</style>`, `<div id="spin"></div>`))
	}))
	t.Cleanup(site.Close)
	s := newSession(t, p, "")
	ctx := testCtx(t, 60*time.Second)
	open(t, s, site, "/")
	const fps = 1
	start := time.Now()
	if err := s.StartTrace(ctx, trace.RecordOptions{FPS: fps}); err != nil {
		t.Fatal(err)
	}
	s.TraceStepBegin(0)
	s.TraceStepEnd(ctx, 0, false, false)
	waitFor(t, func() bool {
		r := s.rec.Load()
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.marks[0].After >= 0
	})
	time.Sleep(2 * time.Second) // the page animates meanwhile
	c := s.StopTrace(ctx, true)
	elapsed := time.Since(start)
	sent := len(c.Frames) + c.DroppedFrames
	t.Logf("the browser sent %d frames in %s", sent, elapsed.Round(time.Millisecond))
	// One frame when the screencast starts, one per FPS interval, and
	// one for the step that ended.
	if most := 2 + int(elapsed.Seconds()*fps+0.999); sent > most || sent < 2 {
		t.Errorf("the browser sent %d frames in %s at %d a second; want 2 to %d", sent, elapsed.Round(time.Millisecond), fps, most)
	}
}
