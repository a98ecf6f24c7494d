package trace_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
	"github.com/duet-test/duet/internal/trace"
)

// TestModes: which modes record and keep; on-first-retry records and keeps
// the first retry only (passed or not), and a bad name is refused.
func TestModes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		m                 trace.Mode
		records, records1 bool // on the first attempt, on the first retry
		pass, fail        bool
		retry1Pass        bool
		retry2Failure     bool
	}{
		{trace.Off, false, false, false, false, false, false},
		{trace.OnFailure, true, true, false, true, false, true},
		{trace.OnFirstRetry, false, true, false, false, true, false},
		{trace.On, true, true, true, true, true, true},
	} {
		if c.m.Records(0) != c.records || c.m.Records(1) != c.records1 || c.m.Keep(true, 0) != c.pass || c.m.Keep(false, 0) != c.fail ||
			c.m.Keep(true, 1) != c.retry1Pass || c.m.Keep(false, 2) != c.retry2Failure {
			t.Errorf("%s: records %v/%v, keep(pass) %v, keep(fail) %v, keep(pass, retry 1) %v, keep(fail, retry 2) %v", c.m, c.m.Records(0), c.m.Records(1),
				c.m.Keep(true, 0), c.m.Keep(false, 0), c.m.Keep(true, 1), c.m.Keep(false, 2))
		}
	}
	// The replay (the screencast): under on-failure a first attempt, which
	// most often passes and keeps nothing, records none unless always.
	for _, c := range []struct {
		m     trace.Mode
		retry int
		p     trace.Replay
		want  bool
	}{
		{trace.OnFailure, 0, "", false},
		{trace.OnFailure, 0, trace.ReplayKept, false},
		{trace.OnFailure, 1, trace.ReplayKept, true},
		{trace.OnFailure, 0, trace.ReplayAlways, true},
		{trace.On, 0, trace.ReplayKept, true},
		{trace.OnFirstRetry, 1, trace.ReplayKept, true},
	} {
		if got := c.m.Replays(c.retry, c.p); got != c.want {
			t.Errorf("%s, retry %d, replay %q: Replays %v, want %v", c.m, c.retry, c.p, got, c.want)
		}
	}
	if _, err := trace.ParseMode("sometimes"); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Errorf("ParseMode(sometimes): got %v", err)
	}
	if got := trace.Resolve("", trace.On, trace.Off); got != trace.On {
		t.Errorf("Resolve: got %s, want the task's on", got)
	}
	if got := trace.Resolve("", "", ""); got != trace.OnFailure {
		t.Errorf("Resolve of nothing: got %s, want on-failure", got)
	}
}

func jpegOf(t *testing.T, c color.Color, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sample(t *testing.T) (trace.Meta, *trace.Capture) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	meta := trace.Meta{RunID: "run_1", ExecutionID: "exec_1", CaseKey: "k", CaseTitle: "checkout", Mode: trace.OnFailure,
		Status: duet.StatusFailed, ErrorCode: duet.CodeAssertionFailed, Error: "step 3: label", Started: start, Finished: at(900),
		Steps: []trace.StepInfo{
			{Index: 0, Kind: "open", Name: "open /", Status: duet.StatusPassed, Start: at(0), End: at(300)},
			{Index: 1, Kind: "click", Name: "click #buy", Status: duet.StatusPassed, Start: at(300), End: at(500), Action: true},
			{Index: 2, Kind: "assertText", Name: "assertText #label", Status: duet.StatusFailed, ErrorCode: duet.CodeAssertionFailed,
				Error: "label is \"Buy\", want \"Purchase\"", Start: at(500), End: at(800), Shot: pngHeader},
		}}
	c := &trace.Capture{Start: start, Viewport: trace.Viewport{Width: 40, Height: 30},
		Frames: []trace.CapturedFrame{
			{AtMs: 100, Data: jpegOf(t, color.White, 40, 30), Pinned: true},
			{AtMs: 400, Data: jpegOf(t, color.Black, 40, 30), Pinned: true},
			{AtMs: 450, Data: jpegOf(t, color.Gray{128}, 40, 30)},
		},
		Marks: []trace.Mark{
			{Index: 0, StartMs: 0, EndMs: 300, Before: -1, After: 0, DOM: []byte("<html><body><h1>Shop</h1></body></html>"), URL: "http://shop/?sid=s3cr3t-value"},
			{Index: 1, StartMs: 300, EndMs: 500, Before: 0, After: 1, DOM: []byte("<html><body>bought</body></html>"), URL: "http://shop/"},
			{Index: 2, StartMs: 500, EndMs: 800, Before: -1, After: 2, DOM: []byte("<html><body>Buy</body></html>"), URL: "http://shop/"},
		},
		Console: []trace.ConsoleLine{{AtMs: 350, Type: "error", Text: "API failed: 500 for token s3cr3t-value"}, {AtMs: 600, Type: "log", Text: "checking"}},
		Network: []trace.Request{
			{ID: "1", AtMs: 10, Method: "GET", URL: "http://shop/", Type: "Document", Status: 200, MIME: "text/html", EncodedBytes: 500, BodyBytes: 400, DurationMs: 20},
			{ID: "2", AtMs: 320, Method: "POST", URL: "http://shop/api/buy", Type: "Fetch", Status: 500, StatusText: "Internal Server Error", MIME: "application/json",
				RequestHeaders:  map[string]string{"Authorization": "Bearer s3cr3t-value", "Content-Type": "application/json"},
				ResponseHeaders: map[string]string{"Content-Type": "application/json"},
				PostData:        `{"qty":1}`, Body: `{"error":"boom s3cr3t-value"}`, EncodedBytes: 80, BodyBytes: 30, DurationMs: 12.5, WaitMs: 10},
		},
	}
	return meta, c
}

var pngHeader = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)

// TestBuild: a trace zip holds the viewer, trace.json, a HAR and the
// evidence files; every secret the run knows, and the values of sensitive
// headers, are scrubbed from all of it; events belong to the step they
// happened in.
func TestBuild(t *testing.T) {
	t.Parallel()
	meta, c := sample(t)
	zipped, tr, err := trace.Build(meta, c, redact.NewSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(zipped, []byte("s3cr3t-value")) {
		// Stored files are deflated: check the files one by one below too.
		t.Errorf("the zip holds the secret")
	}
	a, err := trace.Open(zipped)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"index.html", "viewer.js", "viewer.css", "trace.json", "network.har", "dom/00.html", "dom/02.html", "frames/0000.jpg", "shots/02-failure.png"} {
		data, _, err := a.File(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if bytes.Contains(data, []byte("s3cr3t-value")) {
			t.Errorf("%s holds the secret", name)
		}
	}
	if tr.Cut != nil {
		t.Errorf("an unbounded trace was cut: %+v", tr.Cut)
	}
	if s := tr.Steps[2]; s.After != "shots/02-failure.png" || s.DOM != "dom/02.html" || s.Before != "" {
		t.Errorf("failing step: got %+v", s)
	}
	if s := tr.Steps[1]; s.Before != "frames/0000.jpg" || s.After != "frames/0001.jpg" {
		t.Errorf("action step: got %+v", s)
	}
	if tr.Console[0].Step != 1 || tr.Console[1].Step != 2 || tr.Network[0].Step != 0 || tr.Network[1].Step != 1 {
		t.Errorf("attribution: console %+v network %+v", tr.Console, tr.Network)
	}
	if got := tr.Network[1].Curl; !strings.HasPrefix(got, "curl -X 'POST' 'http://shop/api/buy'") || !strings.Contains(got, `--data-raw '{"qty":1}'`) || !strings.Contains(got, "Authorization: [redacted]") {
		t.Errorf("curl: got %s", got)
	}
	if len(tr.Frames) != 3 {
		t.Errorf("frames: got %d, want 3", len(tr.Frames))
	}
	har, _, _ := a.File("network.har")
	var h struct {
		Log struct {
			Version string `json:"version"`
			Entries []struct {
				Request  struct{ Method, URL string } `json:"request"`
				Response struct {
					Status  int `json:"status"`
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"response"`
				Timings struct{ Wait, Receive float64 } `json:"timings"`
			} `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(har, &h); err != nil || h.Log.Version != "1.2" || len(h.Log.Entries) != 2 {
		t.Fatalf("HAR: %v %+v", err, h)
	}
	if e := h.Log.Entries[1]; e.Response.Status != 500 || e.Response.Content.Text != `{"error":"boom [redacted]"}` || e.Timings.Wait != 10 {
		t.Errorf("HAR entry: got %+v", e)
	}
	page, _, _ := a.File("index.html")
	for _, want := range []string{`<iframe class="dom-frame" sandbox src="dom/02.html"`, `class="req bad"`, "Copy as curl", `id="replay-frame"`, `data-cmd="curl -X &#39;POST&#39;`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	if _, _, err := a.File("../trace.json"); duet.ErrorCode(err) != duet.CodeNotFound {
		t.Errorf("a path out of the trace: got %v", err)
	}
}

// TestBuildBound: a trace past its bound keeps the failing step's
// evidence, drops the rest, and says so.
func TestBuildBound(t *testing.T) {
	t.Parallel()
	meta, c := sample(t)
	_, tr, err := trace.Build(meta, c, redact.NewSet(), int64(len(pngHeader)+40))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Cut == nil || tr.Cut.FromStep != 0 || tr.Cut.Frames == 0 || !strings.Contains(tr.Cut.Reason, "DUET_TRACE_MAX_BYTES") {
		t.Fatalf("cut: got %+v", tr.Cut)
	}
	if tr.Steps[2].After != "shots/02-failure.png" {
		t.Errorf("the failing step lost its screenshot: %+v", tr.Steps[2])
	}
	if tr.Steps[0].After != "" || tr.Steps[0].DOM != "" {
		t.Errorf("the first step kept evidence past the bound: %+v", tr.Steps[0])
	}
}

// TestSummarize: the summary names the failing step and keeps its lines
// and the earlier errors, within the budget.
func TestSummarize(t *testing.T) {
	t.Parallel()
	meta, c := sample(t)
	_, tr, err := trace.Build(meta, c, redact.NewSet(), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := trace.Summarize(tr, 0)
	if err != nil {
		t.Fatal(err)
	}
	var s trace.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.FailingStep != 2 || len(s.Steps) != 3 || len(s.Network) != 1 || s.Network[0].Status != 500 || len(s.Console) != 2 || s.Omitted.Network != 1 {
		t.Errorf("summary: got %s", b)
	}
	small, err := trace.Summarize(tr, 900)
	if err != nil {
		t.Fatal(err)
	}
	if len(small) > 900 && bytes.Contains(small, []byte(`"network":[{`)) {
		t.Errorf("summary over its budget with rows left: %d bytes", len(small))
	}
}
