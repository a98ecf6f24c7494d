package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/browser"
	"github.com/duet-test/duet/internal/browser/chromiumtest"
	"github.com/duet-test/duet/internal/sample/sampletest"
	"github.com/duet-test/duet/internal/sqlite"
)

// TestDeviceListRealADB runs `duet device list` with the real adb binary on a
// server of its own: no phone is attached here, and the output says how to
// attach one. (Not parallel: it sets ANDROID_ADB_SERVER_PORT for adb.)
func TestDeviceListRealADB(t *testing.T) {
	path, err := exec.LookPath("adb")
	if err != nil {
		if os.Getenv("DUET_REQUIRE_ADB") == "1" {
			t.Fatal("DUET_REQUIRE_ADB=1 but adb is not on PATH (apt-get install -y adb)")
		}
		t.Skip("skipping: adb is not on PATH (scripts/deps.sh installs it; DUET_REQUIRE_ADB=1 fails instead)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	t.Setenv("ANDROID_ADB_SERVER_PORT", port)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		exec.CommandContext(ctx, path, "kill-server").Run()
	})
	h := newHome(t)
	h.env["DUET_ADB_PATH"] = path
	out := h.must(0, "device", "list")
	if !strings.Contains(out, "no Android device attached") || !strings.Contains(out, "USB debugging") {
		if strings.Contains(out, "DEVICE") {
			t.Skipf("a phone is attached to this machine:\n%s", out)
		}
		t.Errorf("duet device list without a phone: got\n%s", out)
	}
	if out := h.must(0, "device", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("--json without a phone: got %s", out)
	}
	// A run on a phone that is not there fails its browser step with what to do.
	h.apply(`
task: {name: shop, baseURL: http://127.0.0.1:1}
cases:
  - title: on the phone
    steps:
      - open: /order
`)
	out = h.must(3, "run", "shop", "--device", "android:R58M1234ABC") // an infrastructure error
	if !strings.Contains(out, "BROWSER_UNAVAILABLE") || !strings.Contains(out, "no Android device is attached") {
		t.Errorf("a run on a missing phone: got\n%s", out)
	}
}

// standInADB writes an adb stand-in that replays output recorded from real
// phones (internal/browser/android/testdata), and forwards to port: a
// separately started Chromium in place of the phone's Chrome.
func standInADB(t *testing.T, port int) string {
	t.Helper()
	td, err := filepath.Abs("../browser/android/testdata")
	if err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
case "$*" in
  "devices -l") cat "` + td + `/devices-l.txt" ;;
  *" shell getprop") cat "` + td + `/getprop-pixel7.txt" ;;
  *" forward tcp:0 localabstract:chrome_devtools_remote") echo ` + strconv.Itoa(port) + ` ;;
  *" forward --remove "*) ;;
  *) echo "adb: unexpected $*" >&2; exit 1 ;;
esac
`
	path := filepath.Join(t.TempDir(), "adb")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDeviceListAndRun: `duet device list` shows each phone with its model,
// Android version, state and holder, and `duet run --device android:SERIAL`
// runs a case on it, with the adb output of real phones replayed.
func TestDeviceListAndRun(t *testing.T) {
	t.Parallel()
	chrome := chromiumtest.Start(t, func(dir string) []string { return browser.CommandLine(dir, 0) })
	_, p, _ := net.SplitHostPort(chrome.Addr)
	port, _ := strconv.Atoi(p)
	h := newHome(t)
	h.env["DUET_ADB_PATH"] = standInADB(t, port)
	h.env["DUET_CHROME_PATH"] = "/nonexistent/chromium" // the phone runs the case, not this machine

	// Another worker holds one of the phones.
	db, err := sqlite.Open(t.Context(), filepath.Join(h.env["DUET_HOME"], "duet.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AcquireDevice(t.Context(), &duet.DeviceLease{Device: "android:emulator-5554", Holder: "lease_x", Owner: "worker-b pid 42"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	db.Close()

	out := h.must(0, "device", "list")
	for _, want := range []string{
		"DEVICE", "android:R58M1234ABC", "Pixel 7", "14 (API 34)",
		"android:emulator-5554", "by worker-b pid 42",
		"android:0A1B2C3D4E5F", "unauthorized", `0A1B2C3D4E5F: unlock the phone and accept the "Allow USB debugging?" prompt`,
		"ABCDEF1234: this user may not open the USB device",
		"duet run TASK --device android:SERIAL",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("duet device list lacks %q:\n%s", want, out)
		}
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(h.must(0, "device", "list", "--json")), &rows); err != nil || len(rows) != 6 {
		t.Fatalf("--json: %v, %d rows", err, len(rows))
	}

	h.apply(`
task: {name: shop, baseURL: ` + sampletest.Shop(t) + `}
cases:
  - title: The order page on the phone
    steps:
      - open: /order?orderId=A1001
      - assertText: {selector: "#status", equals: paid}
      - screenshot: {name: on the phone}
`)
	out = h.must(0, "run", "shop", "--device", "android:R58M1234ABC")
	if !strings.Contains(out, "passed") {
		t.Errorf("duet run on the phone: got\n%s", out)
	}
	code, out, errOut := h.duet(t.Context(), "run", "shop", "--device", "nokia-3310")
	if code == 0 || !strings.Contains(out+errOut, "valid devices are") {
		t.Errorf("an unknown device: exit %d\n%s%s", code, out, errOut)
	}
}

// TestDemoRemoteBrowser runs `duet demo` with DUET_BROWSER_URL pointing at a
// Chromium started separately (ws:// address): the demo case passes there,
// and no browser is started here (DUET_CHROME_PATH points nowhere).
func TestDemoRemoteBrowser(t *testing.T) {
	t.Parallel()
	chrome := chromiumtest.Start(t, func(dir string) []string { return browser.CommandLine(dir, 0) })
	h := newHome(t)
	h.env["DUET_BROWSER_URL"] = chrome.WS
	h.env["DUET_CHROME_PATH"] = "/nonexistent/chromium"
	out := h.must(0, "demo", "--home", filepath.Join(t.TempDir(), "demo"))
	for _, want := range []string{"PASSED: 2 passed", "MCP_SERVER_NOT_CONFIGURED", "DEMO OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
