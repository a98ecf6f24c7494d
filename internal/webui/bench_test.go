package webui_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/app"
	"github.com/duet-test/duet/internal/app/apptest"
)

// seedRuns applies a one-case task as alice and stores n runs of it.
func seedRuns(tb testing.TB, e *apptest.Env, n int) {
	tb.Helper()
	ctx := tb.Context()
	res, err := e.App.API.ApplySuite(ctx, duet.Caller{UserID: "alice", Source: duet.SourceAPI}, api.ApplyIn{Source: apptest.Suite("busy")})
	if err != nil {
		tb.Fatal(err)
	}
	cases, _, _, _ := e.App.Store.FindCases(ctx, duet.CaseFilter{TaskID: res.Task.ID})
	c := cases[0]
	for range n {
		run := &duet.Run{TaskID: res.Task.ID, TriggeredBy: "alice", CallSource: duet.SourceAPI}
		x := &duet.Execution{CaseID: c.ID, CaseKey: c.Key, CaseTitle: c.Title, CaseVersion: c.Version, Steps: c.Steps}
		if _, _, err := e.App.Store.CreateRun(ctx, duet.StartRunParams{Run: run, Executions: []*duet.Execution{x}}); err != nil {
			tb.Fatal(err)
		}
	}
}

// pageGetter serves console pages in-process as alice, so that what is
// timed is the server's work for a page (authentication, the governed
// list, rendering), not the network.
func pageGetter(tb testing.TB, e *apptest.Env) func(path string) (int, string, time.Duration) {
	c, _ := e.SignIn("alice")
	req, _ := http.NewRequest("GET", e.URL+"/runs", nil)
	cookies := c.Jar.Cookies(req.URL)
	h := e.App.Handler(app.ServeOptions{})
	return func(path string) (int, string, time.Duration) {
		r := httptest.NewRequest("GET", path, nil)
		r.Host = "127.0.0.1"
		for _, ck := range cookies {
			r.AddCookie(ck)
		}
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String(), time.Since(start)
	}
}

var nextRe = regexp.MustCompile(`href="(/runs\?[^"]*cursor=[^"]+)" rel="next"`)
var runRe = regexp.MustCompile(`href="/runs/(run_[0-9a-z]+)"`)

// TestThousandRunsArePaged: 1,000 runs are listed 50 to a page, every run
// once, newest first. The server time per page is logged, not asserted
// (performance is measured by BenchmarkRunsPage, not by timed tests).
func TestThousandRunsArePaged(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, nil)
	seedRuns(t, e, 1000)
	get := pageGetter(t, e)
	seen := map[string]bool{}
	var times []time.Duration
	path := "/runs"
	for pages := 0; path != ""; pages++ {
		if pages > 25 {
			t.Fatal("more than 25 pages for 1,000 runs")
		}
		status, body, took := get(strings.ReplaceAll(path, "&amp;", "&"))
		if status != 200 {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		times = append(times, took)
		ids := runRe.FindAllStringSubmatch(body, -1)
		if len(ids) > 50 {
			t.Fatalf("%s lists %d runs, more than a page", path, len(ids))
		}
		for _, m := range ids {
			if seen[m[1]] {
				t.Fatalf("run %s listed twice", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := nextRe.FindStringSubmatch(body); m != nil {
			path = m[1]
		}
	}
	if len(seen) != 1000 {
		t.Fatalf("listed %d runs, want 1000", len(seen))
	}
	slices.Sort(times)
	median, worst := times[len(times)/2], times[len(times)-1]
	t.Logf("%d pages: median %v, slowest %v per page (server time)", len(times), median, worst)
}

// BenchmarkRunsPage measures the server time of one page of the runs
// list (50 of 1,000 runs), from the session cookie to the rendered HTML:
//
//	go test -run x -bench RunsPage ./internal/webui/
func BenchmarkRunsPage(b *testing.B) {
	e := apptest.New(b, nil)
	seedRuns(b, e, 1000)
	get := pageGetter(b, e)
	_, first, _ := get("/runs")
	next := strings.ReplaceAll(nextRe.FindStringSubmatch(first)[1], "&amp;", "&")
	for _, p := range []string{"/runs", next} {
		b.Run(strings.Split(p, "&")[0], func(b *testing.B) {
			for b.Loop() {
				if status, _, _ := get(p); status != 200 {
					b.Fatal(status)
				}
			}
		})
	}
}
