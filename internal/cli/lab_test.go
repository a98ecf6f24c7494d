package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
)

// TestLabExample applies examples/lab.yaml — every locator, action and
// assertion of the suite format's browser steps — to the lab pages of the
// sample shop and runs it, as a user does: every case passes.
func TestLabExample(t *testing.T) {
	t.Parallel()
	requireBrowser(t)
	runLab(t, newHome(t))
}

// TestLabExampleRemoteBrowser runs the lab suite in a Chromium started
// separately (DUET_BROWSER_URL), with no browser of this process: the
// remote-browser path of every step kind.
func TestLabExampleRemoteBrowser(t *testing.T) {
	t.Parallel()
	chrome := chromiumtest.Start(t, func(dir string) []string { return browser.CommandLine(dir, 0) })
	h := newHome(t)
	h.env["DUET_BROWSER_URL"] = chrome.WS
	h.env["DUET_CHROME_PATH"] = "/nonexistent/chromium"
	runLab(t, h)
}

func runLab(t *testing.T, h *duetHome) {
	t.Helper()
	shop := startShop(t)
	h.must(0, "apply", "-f", filepath.Join("..", "..", "examples", "lab.yaml"), "--base-url", shop)
	code, out, errOut := h.duet(t.Context(), "run", "lab")
	if code != 0 || !strings.Contains(out, "PASSED: 8 passed") {
		t.Fatalf("duet run lab: exit %d\n%s\n%s", code, out, errOut)
	}
}
