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
	r, err := s.CheckAccessibility(ctx, AccessibilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]AxeViolation{}
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

	r, err = s.CheckAccessibility(ctx, AccessibilityOptions{Include: []string{"#tools"}})
	if err != nil || len(r.Violations) != 1 || r.Violations[0].ID != "button-name" {
		t.Fatalf("include #tools: %+v %v", r, err)
	}
	r, err = s.CheckAccessibility(ctx, AccessibilityOptions{Exclude: []string{"#tools", "#faint", "#logo"}})
	if err != nil || len(r.Violations) != 0 {
		t.Fatalf("exclude the defects: %+v %v", r, err)
	}
	r, err = s.CheckAccessibility(ctx, AccessibilityOptions{Tags: []string{"wcag2a"}})
	if err != nil || slices.ContainsFunc(r.Violations, func(v AxeViolation) bool { return v.ID == "color-contrast" }) {
		t.Fatalf("wcag2a only (contrast is wcag2aa): %+v %v", r, err)
	}
	if _, err := s.CheckAccessibility(ctx, AccessibilityOptions{Include: []string{"#["}}); duet.ErrorCode(err) != duet.CodeInvalidArgument {
		t.Fatalf("a bad selector: %v", err)
	}
}
