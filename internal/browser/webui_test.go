package browser

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestSessionLoadsNoWindowWebUI: a browser context does not start a
// renderer for the omnibox popup of a window that headless Chromium never
// shows (--top-chrome-webui: one more renderer process per context, a third
// of a case's CPU before WebUIOmniboxPopup was switched off). The page's own
// renderers are there, so the scan does see this test's processes. The
// full browser is the one with windows (the headless shell, which the pool
// prefers, has none), so this test starts it by name.
func TestSessionLoadsNoWindowWebUI(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	t.Parallel()
	requireChromium(t)
	full := fullBrowser()
	if full == "" {
		t.Skip("skipping: only Chromium's headless shell is installed, which opens no windows")
	}
	p := NewPool(Options{ExecPath: full, MaxBrowsers: 1, MaxContextsPerBrowser: 4, Logger: testLogger()})
	t.Cleanup(p.Close)
	site := newSite(t)
	for range 2 {
		open(t, newSession(t, p, ""), site, "/")
	}
	renderers, webui := 0, 0
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, m := range matches {
		args, err := os.ReadFile(m)
		if err != nil || !bytes.Contains(args, []byte(tempRoot)) {
			continue
		}
		// Chromium's child processes write their command line back as one
		// string: its arguments are separated by NULs or by spaces.
		argv := bytes.FieldsFunc(args, func(r rune) bool { return r == 0 || r == ' ' })
		for _, a := range argv {
			switch string(a) {
			case "--type=renderer":
				renderers++
			case "--top-chrome-webui":
				webui++
			}
		}
	}
	if renderers == 0 {
		t.Fatal("no renderer process of the test's browsers found: the scan reads nothing")
	}
	if webui != 0 {
		t.Errorf("%d of %d renderer processes are --top-chrome-webui: each context starts a window's omnibox popup", webui, renderers)
	}
}
