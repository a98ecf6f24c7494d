package browser

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/trace"
)

// A session records a trace (package trace) when asked: the page's
// screencast frames at a bounded rate, its console and uncaught errors, its
// network requests, and per step the page's DOM. The frames come as the
// page repaints, from the browser, so a step's screenshots before and after
// cost the step nothing: they are the frames the page showed then. The
// browser's capture of those frames costs the page, though: a recording
// with RecordOptions.NoReplay runs no screencast at all.

// recorder is the trace recording of a session.
type recorder struct {
	s      *Session
	opts   trace.RecordOptions
	start  time.Time
	cancel context.CancelFunc
	done   sync.WaitGroup
	kick   chan struct{} // a step ended: acknowledge the frame held now

	mu         sync.Mutex
	frames     []trace.CapturedFrame
	frameBytes int64
	domBytes   int64                // the DOM snapshots in marks
	droppedDOM int                  // the snapshots let go of (boundDOMLocked)
	pending    *trace.CapturedFrame // the newest frame, not kept yet (the rate bound)
	dropped    int
	marks      []trace.Mark
	afterDue   []int // marks whose after-frame is the next pinned one
	console    []trace.ConsoleLine
	reqs       map[network.RequestID]*trace.Request
	order      []network.RequestID
	sentAt     map[network.RequestID]float64 // monotonic seconds
	droppedEv  int
	stopped    bool
}

func (r *recorder) now() int64 { return time.Since(r.start).Milliseconds() }

// StartTrace starts recording a trace of the session's page; StopTrace
// ends it. Marks of the steps (TraceStepBegin, TraceStepEnd) go between.
// A session records one trace at a time: a second StartTrace ends the
// first, unkept.
//
// Errors: CodeCancelled, CodeBrowserError when the browser refuses the
// screencast.
func (s *Session) StartTrace(ctx context.Context, opts trace.RecordOptions) error {
	c, err := s.begin(ctx, "trace", 0)
	if err != nil {
		return err
	}
	defer s.end(c)
	if old := s.rec.Swap(nil); old != nil {
		old.stop()
	}
	opts = opts.WithDefaults()
	lctx, cancel := context.WithCancel(s.ctx)
	r := &recorder{s: s, opts: opts, start: time.Now(), cancel: cancel, kick: make(chan struct{}, 1),
		reqs: map[network.RequestID]*trace.Request{}, sentAt: map[network.RequestID]float64{}}
	if err := chromedp.Listen(lctx, r.onEvent); err != nil {
		cancel()
		return s.fail(c, err, nil)
	}
	if opts.NoReplay {
		s.rec.Store(r)
		return nil
	}
	frames := chromedp.Events(lctx, page.ScreencastFrame)
	r.done.Go(func() {
		for ev, err := range frames {
			if err != nil {
				return
			}
			r.onFrame(lctx, ev)
		}
	})
	q := int64(opts.Quality)
	_, err = chromedp.Call(c.c, page.StartScreencast, page.StartScreencastParams{
		Format: page.StartScreencastFormatJpeg, Quality: &q,
		MaxWidth:  max(1, int64(s.device.Width*opts.FramePercent/100)),
		MaxHeight: max(1, int64(s.device.Height*opts.FramePercent/100)), EveryNthFrame: 1,
	})
	if err != nil {
		cancel()
		r.done.Wait()
		return s.fail(c, err, nil)
	}
	s.rec.Store(r)
	return nil
}

// onFrame keeps a screencast frame within the rate and byte bounds and
// acknowledges it. The browser sends the next frame only then: the
// acknowledgement waits until the replay's rate (FPS) wants the next one,
// or a step ends and wants its screenshot after, so that the browser
// captures and encodes no frame that would be dropped — most frames of a
// page that loads or animates, each a cost to the page.
func (r *recorder) onFrame(ctx context.Context, ev page.EventScreencastFrame) {
	r.keep(trace.CapturedFrame{AtMs: r.now(), Data: ev.Data})
	t := time.NewTimer(time.Second / time.Duration(r.opts.FPS))
	select {
	case <-t.C:
	case <-r.kick:
	case <-ctx.Done():
	}
	t.Stop()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, _ = chromedp.Call(actx, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: ev.SessionID})
	cancel()
}

// keep keeps a screencast frame within the rate and byte bounds.
func (r *recorder) keep(f trace.CapturedFrame) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	if len(r.afterDue) > 0 {
		// The first frame after a step ended: its screenshot after.
		if r.pending != nil {
			r.dropped++
			r.pending = nil
		}
		f.Pinned = true
		r.frames = append(r.frames, f)
		r.frameBytes += int64(len(f.Data))
		r.resolveLocked(len(r.frames) - 1)
		return
	}
	interval := int64(1000 / r.opts.FPS)
	n := len(r.frames)
	if n > 0 && f.AtMs-r.frames[n-1].AtMs < interval {
		if r.pending != nil {
			r.dropped++
		}
		r.pending = &f
		return
	}
	if r.pending != nil {
		r.dropped++ // an older frame the newer one replaces
		r.pending = nil
	}
	if r.frameBytes+int64(len(f.Data)) > r.opts.MaxFrameBytes {
		// Past the replay's bound: kept only if a step pins it.
		r.pending = &f
		return
	}
	r.frames = append(r.frames, f)
	r.frameBytes += int64(len(f.Data))
}

// pinLocked returns the index of the frame the page shows now, keeping it
// as a screenshot whatever the bounds; -1 when there is none yet.
func (r *recorder) pinLocked() int {
	if p := r.pending; p != nil {
		r.pending = nil
		p.Pinned = true
		r.frames = append(r.frames, *p)
		r.frameBytes += int64(len(p.Data))
	}
	n := len(r.frames) - 1
	if n >= 0 {
		r.frames[n].Pinned = true
		r.resolveLocked(n)
	}
	return n
}

// resolveLocked makes frame i the screenshot after the steps that wait
// for one.
func (r *recorder) resolveLocked(i int) {
	for _, m := range r.afterDue {
		r.marks[m].After = i
	}
	r.afterDue = r.afterDue[:0]
}

// TraceStepBegin marks the start of step index in the session's trace
// (nothing when none is being recorded): what the page does from now on is
// the step's, and the frame it shows now is the screenshot before it.
func (s *Session) TraceStepBegin(index int) {
	r := s.rec.Load()
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.pinLocked()
	r.marks = append(r.marks, trace.Mark{Index: index, StartMs: r.now(), EndMs: -1, Before: before, After: -1})
}

// TraceStepEnd marks the end of step index. With dom it reads the page's
// DOM (its scripts stripped) and URL; with shot it takes a screenshot of
// the page as the step left it. Without shot, the next frame the page
// shows is the screenshot after the step: free, but the screencast runs a
// moment behind the page. Each waits for the session's turn within ctx;
// what cannot be read in time is noted, not an error.
func (s *Session) TraceStepEnd(ctx context.Context, index int, dom, shot bool) {
	r := s.rec.Load()
	if r == nil {
		return
	}
	var snap domSnapshot
	var note string
	var img []byte
	if dom || shot {
		if c, err := s.begin(ctx, "trace", 5*time.Second); err == nil {
			if dom {
				if snap, err = evalJS[domSnapshot](c.c, jsSnapshot, r.opts.MaxDOMBytes); err != nil {
					note = "the DOM could not be read: " + duet.ErrorMessage(err)
				}
			}
			if shot {
				q := int64(r.opts.Quality)
				if data, err := s.capture(c, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatJpeg, Quality: &q}); err == nil {
					img = data
				}
			}
			s.end(c)
		} else if dom {
			note = "the DOM could not be read: " + duet.ErrorMessage(err)
		}
		if snap.Cut {
			note = fmt.Sprintf("cut at %d bytes", r.opts.MaxDOMBytes)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.marks) - 1; i >= 0; i-- {
		m := &r.marks[i]
		if m.Index != index || m.EndMs >= 0 {
			continue
		}
		m.EndMs = r.now()
		if snap.HTML != "" {
			m.DOM = []byte(snap.HTML)
			r.domBytes += int64(len(m.DOM))
			r.boundDOMLocked()
		}
		m.DOMNote, m.URL = note, snap.URL
		if len(img) > 0 {
			r.frames = append(r.frames, trace.CapturedFrame{AtMs: m.EndMs, Data: img, Pinned: true})
			r.frameBytes += int64(len(img))
			m.After = len(r.frames) - 1
		} else if !r.opts.NoReplay {
			r.afterDue = append(r.afterDue, i)
			select {
			case r.kick <- struct{}{}:
			default:
			}
		}
		break
	}
}

// boundDOMLocked lets go of the oldest steps' DOM snapshots while those
// kept are over the recording's bound (RecordOptions.MaxDOMTotalBytes);
// the newest is always kept.
func (r *recorder) boundDOMLocked() {
	for i := 0; i < len(r.marks)-1 && r.domBytes > r.opts.MaxDOMTotalBytes; i++ {
		if m := &r.marks[i]; m.DOM != nil {
			r.domBytes -= int64(len(m.DOM))
			m.DOM, m.DOMNote = nil, ""
			r.droppedDOM++
		}
	}
}

// StopTrace ends the session's trace and returns what it recorded; nil
// when none was being recorded. With keep, it first reads from the browser
// the bodies of the document, XHR and fetch responses (up to
// trace.MaxBodyBytes each), which the browser keeps for a while; without,
// it reads nothing more.
func (s *Session) StopTrace(ctx context.Context, keep bool) *trace.Capture {
	r := s.rec.Swap(nil)
	if r == nil {
		return nil
	}
	if keep {
		r.mu.Lock()
		r.pinLocked()
		r.mu.Unlock()
	}
	if s.ctx.Err() == nil && !r.opts.NoReplay {
		sctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		_, _ = chromedp.Call(sctx, page.StopScreencast, cdp.Empty{})
		cancel()
	}
	r.stop()
	if !keep {
		return nil
	}
	c := &trace.Capture{Start: r.start, Viewport: trace.Viewport{Width: s.device.Width, Height: s.device.Height},
		Frames: r.frames, Marks: r.marks, Console: r.console, DroppedFrames: r.dropped, DroppedEvents: r.droppedEv, NoReplay: r.opts.NoReplay,
		DroppedSnapshots: r.droppedDOM, MaxDOMTotalBytes: r.opts.MaxDOMTotalBytes}
	for _, id := range r.order {
		req := *r.reqs[id]
		if wantsBody(req) && ctx.Err() == nil && s.ctx.Err() == nil {
			s.readBody(ctx, id, &req)
		}
		c.Network = append(c.Network, req)
	}
	return c
}

func (r *recorder) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.cancel()
	r.done.Wait()
}

// wantsBody reports whether a trace keeps the body of the response to req.
func wantsBody(req trace.Request) bool {
	switch req.Type {
	case "Document", "XHR", "Fetch":
	default:
		return false
	}
	return req.Status > 0 && req.Failed == "" && req.Method != "HEAD"
}

// readBody reads the response body of request id from the browser.
func (s *Session) readBody(ctx context.Context, id network.RequestID, req *trace.Request) {
	c, err := s.begin(ctx, "trace", 5*time.Second)
	if err != nil {
		return
	}
	defer s.end(c)
	res, err := chromedp.Call(c.c, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
	if err != nil {
		req.BodyNote = "not kept by the browser"
		return
	}
	body := res.Body
	if len(body) > trace.MaxBodyBytes {
		body = body[:trace.MaxBodyBytes]
		req.BodyNote = fmt.Sprintf("cut at %d bytes", trace.MaxBodyBytes)
	}
	if utf8.Valid(body) {
		req.Body = string(body)
	} else if len(res.Body) <= trace.MaxBodyBytes {
		req.Body, req.BodyBase64 = base64.StdEncoding.EncodeToString(body), true
	} else {
		req.BodyNote = fmt.Sprintf("binary, %d bytes: not kept", len(res.Body))
	}
}

// onEvent records a console or network event. It runs in the tab's read
// loop: it only takes notes under the lock.
func (r *recorder) onEvent(ev any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	switch e := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		line := trace.ConsoleLine{AtMs: r.now(), Type: consoleType(string(e.Type)), Text: argsText(e.Args)}
		if st := e.StackTrace; st != nil && len(st.CallFrames) > 0 {
			line.URL, line.Line = st.CallFrames[0].URL, st.CallFrames[0].LineNumber+1
		}
		r.addLine(line)
	case *runtime.EventExceptionThrown:
		d := e.ExceptionDetails
		if d == nil {
			return
		}
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text = d.Exception.Description
		}
		r.addLine(trace.ConsoleLine{AtMs: r.now(), Type: "exception", Text: text, URL: d.URL, Line: d.LineNumber + 1})
	case *cdplog.EventEntryAdded:
		if en := e.Entry; en != nil {
			r.addLine(trace.ConsoleLine{AtMs: r.now(), Type: consoleType(string(en.Level)), Text: en.Text, URL: en.URL, Line: en.LineNumber})
		}
	case *network.EventRequestWillBeSent:
		if e.Request == nil {
			return
		}
		if old := r.reqs[e.RequestID]; old != nil && e.RedirectResponse != nil {
			// A redirect: the hop ends here, and the next goes under a new id.
			respond(old, e.RedirectResponse)
			old.DurationMs = (e.Timestamp.Float64() - r.sentAt[e.RequestID]) * 1000
			hop := network.RequestID(fmt.Sprintf("%s.%d", e.RequestID, len(r.order)))
			r.reqs[hop], r.sentAt[hop] = old, r.sentAt[e.RequestID]
			for i, id := range r.order {
				if id == e.RequestID {
					r.order[i] = hop
				}
			}
			delete(r.reqs, e.RequestID)
		}
		if len(r.order) >= r.opts.MaxEvents {
			r.droppedEv++
			return
		}
		req := &trace.Request{ID: string(e.RequestID), AtMs: r.now(), Method: e.Request.Method, URL: e.Request.URL + e.Request.URLFragment,
			Type: string(e.Type), RequestHeaders: headers(e.Request.Headers), EncodedBytes: -1, BodyBytes: -1}
		for _, pd := range e.Request.PostDataEntries {
			req.PostData += string(pd.Bytes)
		}
		r.reqs[e.RequestID] = req
		r.sentAt[e.RequestID] = e.Timestamp.Float64()
		r.order = append(r.order, e.RequestID)
	case *network.EventResponseReceived:
		if req := r.reqs[e.RequestID]; req != nil && e.Response != nil {
			respond(req, e.Response)
			if req.Type == "" {
				req.Type = string(e.Type)
			}
		}
	case *network.EventLoadingFinished:
		if req := r.reqs[e.RequestID]; req != nil {
			req.EncodedBytes = int64(e.EncodedDataLength)
			if e.EncodedBodyLength > 0 {
				req.BodyBytes = int64(e.EncodedBodyLength)
			}
			req.DurationMs = (e.Timestamp.Float64() - r.sentAt[e.RequestID]) * 1000
		}
	case *network.EventLoadingFailed:
		if req := r.reqs[e.RequestID]; req != nil {
			req.Failed = e.ErrorText
			if e.Canceled {
				req.Failed += " (cancelled)"
			}
			if e.BlockedReason != "" {
				req.Failed += " (blocked: " + string(e.BlockedReason) + ")"
			}
			req.DurationMs = (e.Timestamp.Float64() - r.sentAt[e.RequestID]) * 1000
		}
	}
}

func (r *recorder) addLine(l trace.ConsoleLine) {
	if len(r.console) >= r.opts.MaxEvents {
		r.droppedEv++
		return
	}
	r.console = append(r.console, l)
}

func respond(req *trace.Request, resp *network.Response) {
	req.Status, req.StatusText, req.MIME = int(resp.Status), resp.StatusText, resp.MimeType
	req.ResponseHeaders = headers(resp.Headers)
	if len(resp.RequestHeaders) > 0 {
		req.RequestHeaders = headers(resp.RequestHeaders)
	}
	if t := resp.Timing; t != nil && t.ReceiveHeadersEnd > 0 {
		req.WaitMs = max(t.ReceiveHeadersEnd-t.SendEnd, 0)
	}
}

func headers(h network.Headers) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// consoleType names a console call or a log level as the trace does.
func consoleType(t string) string {
	switch t {
	case "warning", "warn":
		return "warning"
	case "error", "assert":
		return "error"
	case "verbose", "debug":
		return "debug"
	case "info":
		return "info"
	}
	return "log"
}

// argsText renders the arguments of a console call as DevTools shows them
// in one line: strings as they are, other values by their description.
func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if a == nil {
			continue
		}
		switch {
		case len(a.Value) > 0:
			var s string
			if json.Unmarshal(a.Value, &s) == nil {
				parts = append(parts, s)
			} else {
				parts = append(parts, string(a.Value))
			}
		case a.UnserializableValue != "":
			parts = append(parts, string(a.UnserializableValue))
		case a.Description != "":
			parts = append(parts, a.Description)
		default:
			parts = append(parts, string(a.Type))
		}
	}
	return strings.Join(parts, " ")
}

// domSnapshot is what jsSnapshot returns.
type domSnapshot struct {
	HTML string `json:"html"`
	URL  string `json:"url"`
	Cut  bool   `json:"cut"`
}

// jsSnapshot serialises the page for a trace: a copy of the document with
// its scripts, frames, plug-ins, event handler attributes and javascript:
// URLs removed, the values of form fields written into it, and the
// stylesheets the page can read inlined (the viewer loads nothing from the
// site), at most max bytes.
const jsSnapshot = `function (max) {
	const doc = document.documentElement;
	if (!doc) return {html: '', url: location.href, cut: false};
	const clone = doc.cloneNode(true);
	const live = doc.querySelectorAll('input, textarea, select');
	const copies = clone.querySelectorAll('input, textarea, select');
	for (let i = 0; i < live.length && i < copies.length; i++) {
		const el = live[i], cp = copies[i];
		if (el.tagName === 'TEXTAREA') { cp.textContent = el.value; continue; }
		if (el.tagName === 'SELECT') {
			const opts = cp.querySelectorAll('option');
			Array.from(el.options).forEach((o, j) => { if (opts[j]) { if (o.selected) opts[j].setAttribute('selected', ''); else opts[j].removeAttribute('selected'); } });
			continue;
		}
		if (el.type === 'checkbox' || el.type === 'radio') { if (el.checked) cp.setAttribute('checked', ''); else cp.removeAttribute('checked'); continue; }
		if (el.type === 'password') { cp.setAttribute('value', el.value ? '••••••' : ''); continue; }
		if (el.type !== 'file') cp.setAttribute('value', el.value);
	}
	clone.querySelectorAll('script, noscript, iframe, frame, frameset, object, embed, applet, base, link, style, template, portal').forEach((el) => {
		if (/^(IFRAME|FRAME|OBJECT|EMBED)$/.test(el.tagName)) {
			const ph = document.createElement('div');
			ph.setAttribute('data-duet-removed', el.tagName.toLowerCase());
			ph.textContent = '[' + el.tagName.toLowerCase() + ' not captured]';
			el.replaceWith(ph);
		} else {
			el.remove();
		}
	});
	clone.querySelectorAll('meta[http-equiv]').forEach((el) => el.remove());
	for (const el of clone.querySelectorAll('*')) {
		for (const a of Array.from(el.attributes)) {
			const n = a.name.toLowerCase();
			if (n.startsWith('on') || n === 'srcdoc' || n === 'ping' || ((n === 'href' || n === 'src' || n === 'action' || n === 'formaction' || n === 'xlink:href') && /^\s*(javascript|vbscript):/i.test(a.value))) {
				el.removeAttribute(a.name);
			}
		}
	}
	let css = '';
	for (const sheet of Array.from(document.styleSheets)) {
		try { css += Array.from(sheet.cssRules).map((r) => r.cssText).join('\n') + '\n'; }
		catch (e) { css += '/* a stylesheet of another origin was not captured */\n'; }
	}
	let head = clone.querySelector('head');
	if (!head) { head = document.createElement('head'); clone.insertBefore(head, clone.firstChild); }
	const style = document.createElement('style');
	style.textContent = css;
	head.appendChild(style);
	const meta = document.createElement('meta');
	meta.setAttribute('charset', 'utf-8');
	head.insertBefore(meta, head.firstChild);
	let html = '<!doctype html>\n' + clone.outerHTML;
	let cut = false;
	if (html.length > max) { html = html.slice(0, max); cut = true; }
	return {html: html, url: location.href, cut: cut};
}`
