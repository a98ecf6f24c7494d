package webui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app/apptest"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/sample/sampletest"
)

// evidenceSuite fails on the sample shop: the orders page's API answers
// 500 (the page logs it) and its label changed.
const evidenceSuite = `task: {name: evidence, baseURL: SHOP, sharedWith: [bob]}
cases:
  - key: orders-label
    title: The orders page keeps its label
    steps:
      - open: /evidence/orders?fail=api
      - assertText: {selector: "#load-state", equals: failed}
      - assertText: {selector: "#orders-label", equals: "Your orders"}
        timeout: 1s
`

// TestTraceViewerInABrowser: a failing case of the sample shop keeps a
// trace that the console's viewer shows in Chromium — the failing step's
// screenshot, its DOM (in a sandboxed frame, no script), the page's
// console error and the API's 500 in the network list, which its filter
// narrows; the run page links it; the REST zip and the JSON summary carry
// the same; bob, with whom the task is shared, gets neither.
func TestTraceViewerInABrowser(t *testing.T) {
	chromiumtest.Require(t)
	// The replay of a first attempt, which on-failure records only when asked.
	e := apptest.Serve(t, map[string]string{"DUET_WORKERS": "1", "DUET_BROWSERS": "1", "DUET_TRACE_REPLAY": "always"})
	shopURL := sampletest.Shop(t)
	if st, body, _ := e.Call("alice", "POST", api.Prefix+"/tasks", api.ApplyIn{Source: strings.Replace(evidenceSuite, "SHOP", shopURL, 1)}); st != http.StatusCreated && st != http.StatusOK {
		t.Fatalf("apply: %d %s", st, body)
	}
	var tasks catalog.ListTasksOut
	_, body, _ := e.Call("alice", "GET", api.Prefix+"/tasks?query=evidence", nil)
	json.Unmarshal(body, &tasks)
	st, body, _ := e.Call("alice", "POST", api.Prefix+"/runs", api.RunIn{TaskID: tasks.Tasks[0].ID}, "Idempotency-Key", "trace-viewer")
	var start catalog.StartRunOut
	if err := json.Unmarshal(body, &start); err != nil || start.RunID == "" {
		t.Fatalf("start: %d %s", st, body)
	}
	var got catalog.GetRunOut
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, body, _ = e.Call("alice", "GET", api.Prefix+"/runs/"+start.RunID, nil)
		json.Unmarshal(body, &got)
		if got.Run.Done || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got.Run.Status != duet.StatusFailed || len(got.Executions) != 1 {
		t.Fatalf("the run: %s", body)
	}
	exec := got.Executions[0].ID
	tracePath := "/runs/" + start.RunID + "/cases/" + exec + "/trace/"

	// REST: the zip to alice; bob may see the run but not its trace.
	st, zipped, resp := e.Call("alice", "GET", api.Prefix+"/runs/"+start.RunID+"/cases/orders-label/trace", nil)
	if st != http.StatusOK || resp.Header.Get("Content-Type") != "application/zip" || len(zipped) < 1000 {
		t.Fatalf("the trace zip: %d %s", st, resp.Header.Get("Content-Type"))
	}
	if st, body, _ := e.Call("bob", "GET", api.Prefix+"/runs/"+start.RunID+"/cases/orders-label/trace", nil); st != http.StatusForbidden || !strings.Contains(string(body), "only alice may see it") {
		t.Fatalf("bob's trace: %d %s", st, body)
	}
	st, body, _ = e.Call("alice", "GET", api.Prefix+"/runs/"+start.RunID+"/cases/orders-label/trace?format=summary", nil)
	if st != http.StatusOK || !strings.Contains(string(body), `"failingStep":2`) || !strings.Contains(string(body), `"status":500`) {
		t.Fatalf("the summary: %d %s", st, body)
	}

	browser := startChromium(t)
	alice := tab(t, browser, e.URL, t.TempDir(), "alice")
	alice.open("/tasks")
	alice.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.KeyEvent(e.Tokens["alice"]), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
	alice.open("/runs/" + start.RunID)
	if href := run(alice, "trace link", chromedp.Evaluate[string](`(document.querySelector('a.trace-link') || {}).getAttribute?.('href') || ''`)); href != tracePath {
		t.Fatalf("the run page's trace link: %q, want %q", href, tracePath)
	}
	alice.do("open the trace", chromedp.Click(chromedp.CSS("a.trace-link")), chromedp.WaitVisible(chromedp.CSS("#steps")))
	// The viewer opens at the failing step.
	alice.do("the failing step", chromedp.WaitVisible(chromedp.CSS("#step-2 img.shot.after")))
	if cur := alice.text("#steps a.selected .name"); !strings.Contains(cur, "#orders-label") {
		t.Fatalf("the selected step: %q", cur)
	}
	if !alice.eval(`(() => { const i = document.querySelector('#step-2 img.shot.after'); return i.complete && i.naturalWidth > 0; })()`) {
		t.Fatal("the failing step's screenshot did not load")
	}
	if alice.eval(`!document.querySelector('#step-0').hidden`) {
		t.Fatal("another step's panel is shown")
	}
	// The DOM: in a sandboxed frame with no script; its document is the
	// page as it failed.
	frame := `document.querySelector('#step-2 iframe.dom-frame')`
	if !alice.eval(frame + `.hasAttribute('sandbox') && ` + frame + `.getAttribute('sandbox') === ''`) {
		t.Fatal("the DOM frame is not sandboxed")
	}
	domURL := e.URL + tracePath + run(alice, "dom src", chromedp.Evaluate[string](frame+`.getAttribute('src')`))
	client, _ := e.SignIn("alice")
	resp, err := client.Get(domURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(csp, "sandbox;") || !strings.Contains(csp, "default-src 'none'") {
		t.Fatalf("the DOM snapshot: %d, CSP %q", resp.StatusCode, csp)
	}
	// The console error and the 500, up to the failing step.
	if c := alice.text("#console tbody"); !strings.Contains(c, "loading orders failed: HTTP 500") {
		t.Fatalf("the console: %s", c)
	}
	rows := `[...document.querySelectorAll('#network tr.req')].filter(r => !r.hidden)`
	if !alice.eval(rows + `.some(r => r.classList.contains('bad') && r.textContent.includes('/api/evidence/orders') && r.querySelector('.status-code').textContent.trim() === '500')`) {
		t.Fatalf("the network list lacks the 500: %s", alice.text("#network tbody"))
	}
	// The filter narrows the list; copy as curl is there.
	alice.do("filter", chromedp.SendKeys(chromedp.CSS("#net-filter"), "api/evidence"))
	if n := run(alice, "rows", chromedp.Evaluate[int](rows+`.length`)); n != 1 {
		t.Fatalf("the filter shows %d rows, want 1", n)
	}
	if curl := run(alice, "curl", chromedp.Evaluate[string](rows+`[0].querySelector('button.copy-curl').dataset.cmd`)); !strings.HasPrefix(curl, "curl '"+shopURL+"/api/evidence/orders?fail=1'") {
		t.Fatalf("copy as curl: %q", curl)
	}
	// Another step: its own panel, fewer rows.
	alice.do("step 1", chromedp.Click(chromedp.CSS("#step-link-0")), chromedp.WaitVisible(chromedp.CSS("#step-0")))
	if alice.eval(`!document.querySelector('#step-2').hidden`) {
		t.Fatal("the failing step stayed shown")
	}
	if run(alice, "title", chromedp.Title()) != "Trace · The orders page keeps its label" {
		t.Fatalf("title %q", run(alice, "title", chromedp.Title()))
	}
	// The replay plays.
	// Waits for the frame to load (a fixed pause failed on a loaded machine).
	alice.do("replay", chromedp.Click(chromedp.CSS("#play")))
	run(alice, "the replay frame", chromedp.Poll[bool](`document.querySelector('#replay-frame').complete && document.querySelector('#replay-frame').naturalWidth > 0`))
	alice.screenshot("trace")

	// The replay as a video, where this machine has ffmpeg: the run page
	// links it, and it holds the case's frames.
	if _, err := osexec.LookPath("ffmpeg"); err == nil || os.Getenv("DUET_REQUIRE_FFMPEG") == "1" {
		alice.open("/runs/" + start.RunID)
		href := run(alice, "video link", chromedp.Evaluate[string](`(document.querySelector('a.video-link') || {}).getAttribute?.('href') || ''`))
		if href != "/runs/"+start.RunID+"/cases/"+exec+"/video" {
			t.Fatalf("the run page's video link: %q", href)
		}
		resp, err := client.Get(e.URL + href + "?format=mp4")
		if err != nil {
			t.Fatal(err)
		}
		video, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "video/mp4" {
			t.Fatalf("the video: %d %s %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), video)
		}
		file := filepath.Join(t.TempDir(), "replay.mp4")
		os.WriteFile(file, video, 0o644)
		out, err := osexec.Command("ffprobe", "-v", "error", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames", "-of", "csv=p=0", file).Output()
		if err != nil || !strings.HasPrefix(string(out), "h264,") || strings.TrimSpace(strings.TrimPrefix(string(out), "h264,")) == "0" {
			t.Fatalf("ffprobe of the video: %q %v", out, err)
		}
	}

	// Bob, with whom the task is shared, sees the run but not the trace.
	bob := tab(t, browser, e.URL, t.TempDir(), "bob")
	bob.open("/tasks")
	bob.do("sign in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.KeyEvent(e.Tokens["bob"]), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(chromedp.CSS("#whoami")))
	bob.open("/runs/" + start.RunID)
	if bob.eval(`!!document.querySelector('a.trace-link, a.video-link')`) {
		t.Fatal("bob's run page links the trace")
	}
	bob.open(tracePath)
	if body := bob.text("main"); !strings.Contains(body, "PERMISSION_DENIED") {
		t.Fatalf("bob's trace page: %s", body)
	}
}
