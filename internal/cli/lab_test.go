package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
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
	shop := sampletest.Shop(t)
	h.must(0, "apply", "-f", filepath.Join("..", "..", "examples", "lab.yaml"), "--base-url", shop)
	code, out, errOut := h.duet(t.Context(), "run", "lab")
	if code != 0 || !strings.Contains(out, "PASSED: 8 passed") {
		t.Fatalf("duet run lab: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestLint: duet lint warns, with the file and the line, about fixed waits
// and selectors tied to the layout; the lab suite has none.
func TestLint(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	out := h.must(0, "lint", "-f", filepath.Join("..", "..", "examples", "lab.yaml"))
	if !strings.Contains(out, "lab.yaml: no warnings") {
		t.Errorf("lint of the lab suite: %s", out)
	}
	file := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(file, []byte(`task: {name: t, baseURL: http://127.0.0.1:1}
cases:
  - title: c
    steps:
      - open: /
      - wait: 2s
      - click: "div > div:nth-child(3)"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out = h.must(0, "lint", "-f", file)
	for _, want := range []string{file + ":6: fixed-wait: c > wait 2s", file + `:7: layout-selector: c > click div > div:nth-child(3): CSS selector "div > div:nth-child(3)" picks by position`, "2 warning(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("lint lacks %q:\n%s", want, out)
		}
	}
	h.must(1, "lint", "-f", file, "--strict")
}

// TestUploadStaysInTheSuiteFolder: an upload step reads files of the
// suite's folder only; a symbolic link there to a file outside it is
// refused by apply and lint with the step's line, and nothing is applied.
func TestUploadStaysInTheSuiteFolder(t *testing.T) {
	t.Parallel()
	h := newHome(t)
	outside := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(outside, []byte("a private key"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "receipt.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inside.txt"), []byte("a receipt"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "s.yaml")
	suite := `task: {name: t, baseURL: http://127.0.0.1:1}
cases:
  - title: c
    steps:
      - open: /
      - upload: {label: Receipt, files: [FILE]}
`
	write := func(name string) {
		if err := os.WriteFile(file, []byte(strings.Replace(suite, "FILE", name, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("receipt.txt")
	for _, cmd := range []string{"apply", "lint"} {
		code, out, errOut := h.duet(t.Context(), cmd, "-f", file)
		if code != 1 || !strings.Contains(errOut, "s.yaml:6:42: files: cannot read receipt.txt in the suite's folder: path escapes from parent") {
			t.Errorf("%s of a link out of the folder: exit %d\n%s\n%s", cmd, code, out, errOut)
		}
	}
	write("inside.txt")
	h.must(0, "apply", "-f", file)
}
