package browser

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"

	"github.com/chromedp/chromedp"

	"github.com/duet-test/duet"
)

// axe-core, the accessibility engine, pinned and embedded (axe/README.md).
var (
	//go:embed axe/axe.min.js
	axeSource string
)

const (
	axeVersion = "4.14.1"
	// axeSHA256 is sri-history.json's digest of axe.min.js 4.14.1.
	axeSHA256 = "KTSJmUUM3yhJqOcLeRL8LahahJ2jnA0NU5T1HUqe2Vw="
)

// AxeVersion is the version of the embedded axe-core.
func AxeVersion() string { return axeVersion }

// axeDigest is the base64 SHA-256 of the embedded axe-core.
func axeDigest() string {
	sum := sha256.Sum256([]byte(axeSource))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// CheckAccessibility runs the embedded axe-core on the page (or the parts
// include names, less those exclude names: CSS selectors) with the rules
// of tags (none: wcag2a and wcag2aa) and returns the violations it finds.
// The engine is injected into the page once per document; the page's own
// scripts are not otherwise touched.
//
// Errors: CodeInvalidArgument (a selector axe-core refuses, or an unknown
// tag), CodeStepTimeout, CodeCancelled and CodeBrowserError.
func (s *Session) CheckAccessibility(ctx context.Context, tags, include, exclude []string) (*duet.AccessibilityResult, error) {
	const op = "assertAccessible"
	c, err := s.begin(ctx, op, 0)
	if err != nil {
		return nil, err
	}
	defer s.end(c)
	has, err := chromedp.Run(c.c, chromedp.Evaluate[bool](`typeof window.axe === 'object' && window.axe.version === `+jsString(axeVersion)))
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	if !has {
		if _, err := chromedp.Run(c.c, chromedp.Evaluate[bool](axeSource+"\n;true")); err != nil {
			return nil, s.fail(c, err, nil)
		}
	}
	if len(tags) == 0 {
		tags = []string{"wcag2a", "wcag2aa"}
	}
	ctxSpec := map[string]any{"exclude": toNested(exclude)}
	if len(include) > 0 {
		ctxSpec["include"] = toNested(include)
	}
	args, _ := json.Marshal([]any{ctxSpec, map[string]any{
		"runOnly":     map[string]any{"type": "tag", "values": tags},
		"resultTypes": []string{"violations"},
	}})
	script := `(async (args) => {
	try {
		const r = await window.axe.run(args[0], args[1]);
		const nodes = (list) => list.map((n) => ({target: n.target.map(String), html: n.html, impact: n.impact || '', failureSummary: n.failureSummary || ''}));
		return {ok: true, url: r.url, passes: r.passes.length, incomplete: r.incomplete.length,
			violations: r.violations.map((v) => ({id: v.id, impact: v.impact || '', description: v.description, help: v.help, helpUrl: v.helpUrl, tags: v.tags, nodes: nodes(v.nodes)}))};
	} catch (e) {
		return {ok: false, msg: String((e && e.message) || e)};
	}
})(` + string(args) + `)`
	type result struct {
		duet.AccessibilityResult
		OK  bool   `json:"ok"`
		Msg string `json:"msg"`
	}
	out, err := chromedp.Run(c.c, chromedp.Evaluate[result](script, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, s.fail(c, err, nil)
	}
	if !out.OK {
		return nil, opError(duet.CodeInvalidArgument, op, nil, "%s: axe-core refused the check: %s", op, out.Msg)
	}
	r := out.AccessibilityResult
	r.Engine = "axe-core " + axeVersion
	return &r, nil
}

// toNested turns selectors into axe-core's context form: a list of
// selector lists (one per frame depth; Duet checks the top document).
func toNested(sels []string) [][]string {
	out := [][]string{}
	for _, s := range sels {
		out = append(out, []string{s})
	}
	return out
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
