package browser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
)

// TestAxePinned: the embedded axe-core is the release its README names.
func TestAxePinned(t *testing.T) {
	if got := axeDigest(); got != axeSHA256 {
		t.Fatalf("axe/axe.min.js has SHA-256 %s, want %s (axe-core %s)", got, axeSHA256, axeVersion)
	}
	if !strings.Contains(axeSource[:200], "axe v"+axeVersion) {
		t.Fatalf("axe/axe.min.js does not say it is v%s: %.80q", axeVersion, axeSource)
	}
}

const a11yPage = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Help</title>
<style>#faint{color:#c8c8c8;background:#fff}</style></head><body><main>
<h1>Help</h1>
<img id="logo" src="data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7" width="40" height="40">
<section id="tools"><button id="icon-button"><svg width="16" height="16" aria-hidden="true"><circle cx="8" cy="8" r="6"></circle></svg></button></section>
<p id="faint">Returns are free within 30 days.</p>
</main></body></html>`

// TestCheckAccessibility: axe-core finds the planted defects with their
// elements, impact and help links; include and exclude narrow the check;
// a second check on the same document does not inject the engine again;
// a bad selector is INVALID_ARGUMENT.
func TestCheckAccessibility(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, a11yPage)
	}))
	t.Cleanup(site.Close)
	s := newSession(t, p, "")
	open(t, s, site, "/")
	ctx := testCtx(t, 90*time.Second)
	r, err := s.CheckAccessibility(ctx, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]duet.AxeViolation{}
	for _, v := range r.Violations {
		byID[v.ID] = v
	}
	for id, target := range map[string]string{"image-alt": "#logo", "button-name": "#icon-button", "color-contrast": "#faint"} {
		v, ok := byID[id]
		if !ok {
			t.Errorf("no %s violation among %v", id, r.Violations)
			continue
		}
		if len(v.Nodes) != 1 || !slices.Equal(v.Nodes[0].Target, []string{target}) || v.Impact == "" || !strings.HasPrefix(v.HelpURL, "https://dequeuniversity.com/") || v.Nodes[0].HTML == "" {
			t.Errorf("%s: %+v", id, v)
		}
	}
	if r.Engine != "axe-core "+axeVersion || r.Passes == 0 {
		t.Errorf("result: %+v", r)
	}

	r, err = s.CheckAccessibility(ctx, nil, []string{"#tools"}, nil)
	if err != nil || len(r.Violations) != 1 || r.Violations[0].ID != "button-name" {
		t.Fatalf("include #tools: %+v %v", r, err)
	}
	r, err = s.CheckAccessibility(ctx, nil, nil, []string{"#tools", "#faint", "#logo"})
	if err != nil || len(r.Violations) != 0 {
		t.Fatalf("exclude the defects: %+v %v", r, err)
	}
	r, err = s.CheckAccessibility(ctx, []string{"wcag2a"}, nil, nil)
	if err != nil || slices.ContainsFunc(r.Violations, func(v duet.AxeViolation) bool { return v.ID == "color-contrast" }) {
		t.Fatalf("wcag2a only (contrast is wcag2aa): %+v %v", r, err)
	}
	if _, err := s.CheckAccessibility(ctx, nil, []string{"#["}, nil); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("a bad selector: %v", err)
	}
}

// TestPageMetrics: a page whose hero image comes late and whose banner is
// pushed in above the text after loading has an LCP past the delay and a
// layout shift; the navigation's timings are there.
func TestPageMetrics(t *testing.T) {
	t.Parallel()
	p := sharedPool(t)
	const delay = 400
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hero.svg":
			time.Sleep(delay * time.Millisecond)
			w.Header().Set("Content-Type", "image/svg+xml")
			// A mosaic: Chromium leaves images of low entropy out of LCP.
			fmt.Fprint(w, `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="300">`)
			for y := 0; y < 300; y += 20 {
				for x := 0; x < 600; x += 20 {
					fmt.Fprintf(w, `<rect x="%d" y="%d" width="20" height="20" fill="#%02x%02x%02x"/>`, x, y, 40+x/4, 120+y/3, 90+(x*y)%120)
				}
			}
			fmt.Fprint(w, `</svg>`)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, `<!doctype html><html><body><h1>New in</h1><p id="intro">Arrivals, picked for you.</p>
<img id="hero" src="/hero.svg" width="600" height="300" alt="Fresh arrivals">
<script>addEventListener('load', () => setTimeout(() => { const d = document.createElement('div'); d.id = 'promo'; d.style.height = '120px'; d.textContent = 'Save 10%';
document.body.insertBefore(d, document.getElementById('intro')); }, 50));</script></body></html>`)
		}
	}))
	t.Cleanup(site.Close)
	s := newSession(t, p, "")
	open(t, s, site, "/")
	ctx := testCtx(t, 60*time.Second)
	if err := s.WaitFor(ctx, WaitCondition{Selector: "#promo"}); err != nil {
		t.Fatal(err)
	}
	m, err := s.PageMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m["lcp"] < delay || m["cls"] <= 0.01 || m["ttfb"] <= 0 || m["fcp"] <= 0 || m["load"] < delay || m["domContentLoaded"] <= 0 {
		t.Fatalf("metrics: %v", m)
	}
	if _, ok := m["inp"]; ok {
		t.Errorf("an INP without any interaction: %v", m)
	}
}
