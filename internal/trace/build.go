package trace

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
)

// Meta is what the engine knows of the case a trace is built for.
type Meta struct {
	RunID, ExecutionID, CaseKey, CaseTitle string
	Mode                                   Mode
	Status                                 duet.RunStatus
	ErrorCode                              duet.Code
	Error                                  string
	Started                                time.Time
	Finished                               time.Time
	// Steps are every step of the case that ran, in order.
	Steps []StepInfo
}

// StepInfo is one step of the case as it ran.
type StepInfo struct {
	Index      int
	Kind       duet.StepKind
	Name       string
	Status     duet.RunStatus
	ErrorCode  duet.Code
	Error      string
	Start, End time.Time
	// Action is true for a step that acts on the page (click, fill, ...):
	// its trace step has a screenshot before it too.
	Action bool
	// Shot is the screenshot the engine took because the step failed
	// (PNG), the most exact picture of the failure.
	Shot []byte
}

// maxText bounds one console line, URL or header value in a trace.
const maxText = 4 << 10

// Build makes the trace of a case: meta from the engine, c from the browser
// (nil when the case opened no page), everything text scrubbed of secrets'
// values (the values of sensitive headers are learnt into secrets first)
// and the whole at most maxBytes (0 means DefaultMaxBytes). It returns the
// zip and the Trace it holds.
func Build(meta Meta, c *Capture, secrets *redact.Set, maxBytes int64) ([]byte, *Trace, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if secrets == nil {
		secrets = redact.NewSet()
	}
	if c == nil {
		c = &Capture{Start: meta.Started}
	}
	start := c.Start
	if start.IsZero() {
		start = meta.Started
	}
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return max(t.Sub(start).Milliseconds(), 0)
	}
	t := &Trace{
		Version: Version, Case: Case{RunID: meta.RunID, ExecutionID: meta.ExecutionID, CaseKey: meta.CaseKey, CaseTitle: secrets.Scrub(meta.CaseTitle)},
		Mode: meta.Mode, Status: meta.Status, ErrorCode: meta.ErrorCode, Error: clip(secrets.Scrub(meta.Error)),
		StartedAt: start.UTC(), Viewport: c.Viewport, NoReplay: c.NoReplay,
		Steps: []Step{}, Console: []ConsoleLine{}, Network: []Request{}, Frames: []Frame{},
	}
	if !meta.Finished.IsZero() {
		t.DurationMs = ms(meta.Finished)
	}
	for _, r := range c.Network {
		for k, v := range r.RequestHeaders {
			secrets.AddHeader(k, v)
		}
		for k, v := range r.ResponseHeaders {
			secrets.AddHeader(k, v)
		}
	}
	b := &builder{files: map[string][]byte{}, max: maxBytes, cut: Cut{MaxBytes: maxBytes, FromStep: -1}}
	marks := map[int]*Mark{}
	for i := range c.Marks {
		marks[c.Marks[i].Index] = &c.Marks[i]
	}
	frameFile := func(i int) string { return fmt.Sprintf("frames/%04d.jpg", i) }

	// The steps, and their evidence: the failing step's first, then the
	// others from the last to the first (what led to the failure matters
	// most), each within the bound.
	for _, si := range meta.Steps {
		st := Step{Index: si.Index, Kind: si.Kind, Name: secrets.Scrub(si.Name), Status: si.Status, ErrorCode: si.ErrorCode,
			Error: clip(secrets.Scrub(si.Error)), StartMs: ms(si.Start), EndMs: ms(si.End)}
		if m := marks[si.Index]; m != nil {
			st.URL = clip(secrets.Scrub(m.URL))
		}
		t.Steps = append(t.Steps, st)
	}
	order := make([]int, len(t.Steps))
	for i := range order {
		order[i] = len(order) - 1 - i
	}
	sort.SliceStable(order, func(a, b int) bool {
		fa, fb := failed(t.Steps[order[a]].Status), failed(t.Steps[order[b]].Status)
		return fa && !fb
	})
	for _, i := range order {
		st, si := &t.Steps[i], meta.Steps[i]
		m := marks[si.Index]
		lost := false
		if len(si.Shot) > 0 {
			name := fmt.Sprintf("shots/%02d-failure%s", si.Index, imageExt(si.Shot))
			if b.add(name, si.Shot) {
				st.After = name
			} else {
				b.cut.Screenshots++
				lost = true
			}
		}
		if m == nil {
			if lost {
				b.lost(si.Index)
			}
			continue
		}
		if st.After == "" && m.After >= 0 && m.After < len(c.Frames) {
			if b.add(frameFile(m.After), c.Frames[m.After].Data) {
				st.After = frameFile(m.After)
			} else {
				b.cut.Screenshots++
				lost = true
			}
		}
		if si.Action && m.Before >= 0 && m.Before < len(c.Frames) {
			if b.add(frameFile(m.Before), c.Frames[m.Before].Data) {
				st.Before = frameFile(m.Before)
			} else {
				b.cut.Screenshots++
				lost = true
			}
		}
		if len(m.DOM) > 0 {
			name := fmt.Sprintf("dom/%02d.html", si.Index)
			dom := []byte(secrets.Scrub(string(m.DOM)))
			if m.DOMNote != "" {
				dom = append(dom, []byte("\n<!-- "+strings.ReplaceAll(m.DOMNote, "--", "- -")+" -->")...)
			}
			if b.add(name, dom) {
				st.DOM = name
			} else {
				b.cut.Snapshots++
				lost = true
			}
		}
		if lost {
			b.lost(si.Index)
		}
	}

	// Console and network, each line attributed to its step.
	marksList := c.Marks
	for _, l := range c.Console {
		l.Step = stepAt(marksList, l.AtMs)
		l.Text, l.URL = clip(secrets.Scrub(l.Text)), clip(secrets.Scrub(l.URL))
		t.Console = append(t.Console, l)
	}
	bodyBudget := maxBytes / 4
	for _, r := range c.Network {
		r.Step = stepAt(marksList, r.AtMs)
		r.URL = clip(secrets.Scrub(r.URL))
		r.RequestHeaders = scrubHeaders(secrets, r.RequestHeaders)
		r.ResponseHeaders = scrubHeaders(secrets, r.ResponseHeaders)
		r.PostData = secrets.Scrub(r.PostData)
		if len(r.PostData) > MaxBodyBytes {
			r.PostData = cutUTF8(r.PostData, MaxBodyBytes)
		}
		if r.Body != "" {
			r.Body = secrets.Scrub(r.Body)
			if int64(len(r.Body)) > bodyBudget || !b.fits(int64(len(r.Body))) {
				r.Body, r.BodyBase64 = "", false
				r.BodyNote = "left out: the trace reached its size bound"
				b.cut.Bodies++
				b.lost(r.Step)
			} else {
				bodyBudget -= int64(len(r.Body))
				b.used += int64(len(r.Body))
			}
		}
		r.Failed = secrets.Scrub(r.Failed)
		r.Curl = Curl(r)
		t.Network = append(t.Network, r)
	}

	// The replay: the frames that are screenshots are in already; the
	// others while the bound allows.
	for i, f := range c.Frames {
		name := frameFile(i)
		if _, ok := b.files[name]; !ok && !b.add(name, f.Data) {
			b.cut.Frames++
			continue
		}
		t.Frames = append(t.Frames, Frame{AtMs: f.AtMs, File: name})
	}
	b.cut.Frames += c.DroppedFrames
	b.cut.Snapshots += c.DroppedSnapshots
	if b.cut.Frames+b.cut.Snapshots+b.cut.Screenshots+b.cut.Bodies > 0 || c.DroppedEvents > 0 {
		cut := b.cut
		cut.Reason = fmt.Sprintf("the trace is bounded to %d bytes per case (DUET_TRACE_MAX_BYTES)", maxBytes)
		if c.DroppedSnapshots > 0 {
			cut.Reason += fmt.Sprintf("; the DOM snapshots of %d early steps were let go of during the run to keep the recording's within %d bytes", c.DroppedSnapshots, c.MaxDOMTotalBytes)
		}
		if c.DroppedEvents > 0 {
			cut.Reason += fmt.Sprintf("; %d console lines or requests past %d each were not recorded", c.DroppedEvents, DefaultMaxEvents)
		}
		t.Cut = &cut
	}

	har, err := HAR(t)
	if err != nil {
		return nil, nil, err
	}
	doc, err := json.MarshalIndent(t, "", " ")
	if err != nil {
		return nil, nil, fmt.Errorf("trace: encoding trace.json: %w", err)
	}
	page, err := viewerPage(t)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	put := func(name string, data []byte) error {
		method := zip.Deflate
		if strings.HasSuffix(name, ".jpg") || strings.HasSuffix(name, ".png") {
			method = zip.Store
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: start.UTC()})
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"index.html", page}, {"viewer.js", viewerJS}, {"viewer.css", viewerCSS}, {"trace.json", doc}, {"network.har", har}} {
		if err := put(f.name, f.data); err != nil {
			return nil, nil, fmt.Errorf("trace: writing %s: %w", f.name, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.files)) {
		if err := put(name, b.files[name]); err != nil {
			return nil, nil, fmt.Errorf("trace: writing %s: %w", name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, nil, fmt.Errorf("trace: closing the zip: %w", err)
	}
	return buf.Bytes(), t, nil
}

func failed(s duet.RunStatus) bool { return s == duet.StatusFailed || s == duet.StatusError }

// builder holds a trace's files within its bound.
type builder struct {
	files map[string][]byte
	used  int64
	max   int64
	cut   Cut
}

func (b *builder) fits(n int64) bool { return b.used+n <= b.max }

func (b *builder) add(name string, data []byte) bool {
	if _, ok := b.files[name]; ok {
		return true
	}
	if !b.fits(int64(len(data))) {
		return false
	}
	b.files[name], b.used = data, b.used+int64(len(data))
	return true
}

// lost notes that step lost evidence.
func (b *builder) lost(step int) {
	if step >= 0 && (b.cut.FromStep < 0 || step < b.cut.FromStep) {
		b.cut.FromStep = step
	}
}

func scrubHeaders(secrets *redact.Set, h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		if redact.IsSensitiveKey(k) {
			out[k] = redact.Mask
			continue
		}
		out[k] = clip(secrets.Scrub(v))
	}
	return out
}

func clip(s string) string {
	if len(s) <= maxText {
		return s
	}
	return cutUTF8(s, maxText) + "…"
}

// cutUTF8 cuts s to at most n bytes without splitting a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func imageExt(data []byte) string {
	if bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		return ".png"
	}
	return ".jpg"
}

// Curl returns r as a curl command line for a POSIX shell. The values are
// r's as stored: a trace's are scrubbed of secrets.
func Curl(r Request) string {
	var b strings.Builder
	b.WriteString("curl")
	if r.Method != "" && r.Method != "GET" {
		b.WriteString(" -X " + shellQuote(r.Method))
	}
	b.WriteString(" " + shellQuote(r.URL))
	for _, k := range slices.Sorted(maps.Keys(r.RequestHeaders)) {
		if strings.HasPrefix(k, ":") {
			continue
		}
		b.WriteString(" -H " + shellQuote(k+": "+r.RequestHeaders[k]))
	}
	if r.PostData != "" {
		b.WriteString(" --data-raw " + shellQuote(r.PostData))
	}
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
