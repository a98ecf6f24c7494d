package android

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"

	"github.com/duet-test/duet/internal/netguard"
)

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseDevices parses `adb devices -l` output in the shapes real phones,
// emulators and adb servers print.
func TestParseDevices(t *testing.T) {
	t.Parallel()
	got := ParseDevices(readFile(t, "devices-l.txt"))
	want := []Device{
		{Serial: "0A1B2C3D4E5F", State: "unauthorized", USB: "1-2", TransportID: "4"},
		{Serial: "192.168.1.5:5555", State: "device", Model: "Pixel 7", Product: "panther", DeviceName: "panther", TransportID: "3"},
		{Serial: "ABCDEF1234", State: "no permissions"},
		{Serial: "R58M1234ABC", State: "device", Model: "SM G981B", Product: "x1q", DeviceName: "x1q", USB: "1-4", TransportID: "1"},
		{Serial: "emulator-5554", State: "device", Model: "sdk gphone64 x86 64", Product: "sdk_gphone64_x86_64", DeviceName: "emu64xa", TransportID: "2"},
		{Serial: "emulator-5556", State: "offline", TransportID: "5"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseDevices (-want +got):\n%s", d)
	}
	got = ParseDevices(readFile(t, "devices-l-old-server.txt"))
	if len(got) != 1 || got[0].Serial != "T065002LTT" || !got[0].Ready() || got[0].Model != "XT1053" {
		t.Errorf("output of a restarted server: got %+v", got)
	}
	if got := ParseDevices(readFile(t, "devices-l-none.txt")); len(got) != 0 {
		t.Errorf("no device: got %+v", got)
	}
	if got := ParseDevices([]byte("List of devices attached\r\nR58M1234ABC\tdevice\r\n\r\n")); len(got) != 1 || got[0].State != "device" {
		t.Errorf("CRLF and tabs: got %+v", got)
	}
}

func TestProblems(t *testing.T) {
	t.Parallel()
	for _, d := range ParseDevices(readFile(t, "devices-l.txt")) {
		p := d.Problem()
		switch d.State {
		case "device":
			if p != "" {
				t.Errorf("%s is ready, got problem %q", d.Serial, p)
			}
		case "unauthorized":
			if !strings.Contains(p, "Allow USB debugging") {
				t.Errorf("%s: got %q", d.Serial, p)
			}
		case "no permissions":
			if !strings.Contains(p, "udev") {
				t.Errorf("%s: got %q", d.Serial, p)
			}
		case "offline":
			if !strings.Contains(p, "plug it again") {
				t.Errorf("%s: got %q", d.Serial, p)
			}
		}
	}
}

func TestParseProps(t *testing.T) {
	t.Parallel()
	p := ParseProps(readFile(t, "getprop-pixel7.txt"))
	for k, want := range map[string]string{"ro.product.model": "Pixel 7", "ro.build.version.release": "14", "ro.build.version.sdk": "34", "ro.product.manufacturer": "Google"} {
		if p[k] != want {
			t.Errorf("%s: got %q, want %q", k, p[k], want)
		}
	}
	if _, ok := p["vendor.multi.line"]; ok {
		t.Errorf("a value spanning lines was kept: %q", p["vendor.multi.line"])
	}
}

// recorder is an adb stand-in: it records the commands and answers them with
// the output recorded from real phones, or a function of the test.
type recorder struct {
	mu    sync.Mutex
	calls []string
	reply func(args []string) ([]byte, error)
}

func (r *recorder) run(_ context.Context, args ...string) ([]byte, error) {
	r.mu.Lock()
	r.calls = append(r.calls, strings.Join(args, " "))
	r.mu.Unlock()
	return r.reply(args)
}

func (r *recorder) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// TestCommands checks the adb command lines Duet runs.
func TestCommands(t *testing.T) {
	t.Parallel()
	devices, props := readFile(t, "devices-l.txt"), readFile(t, "getprop-pixel7.txt")
	rec := &recorder{reply: func(args []string) ([]byte, error) {
		switch {
		case args[0] == "devices":
			return devices, nil
		case len(args) > 3 && args[2] == "shell" && args[3] == "getprop":
			return props, nil
		case len(args) > 3 && args[2] == "forward" && args[3] == "tcp:0":
			return []byte("41235\n"), nil
		}
		return nil, nil
	}}
	a := &ADB{Path: "/opt/android/adb", Run: rec.run}
	ctx := t.Context()
	devs, err := a.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 6 || devs[3].Model != "Pixel 7" || devs[3].Android != "14" || devs[0].Android != "" {
		t.Errorf("Devices: got %+v", devs)
	}
	port, err := a.Forward(ctx, "R58M1234ABC")
	if err != nil || port != 41235 {
		t.Errorf("Forward: got %d, %v", port, err)
	}
	if err := a.Unforward(ctx, "R58M1234ABC", port); err != nil {
		t.Fatal(err)
	}
	if err := a.StartChrome(ctx, "R58M1234ABC"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"devices -l",
		"-s 192.168.1.5:5555 shell getprop",
		"-s R58M1234ABC shell getprop",
		"-s emulator-5554 shell getprop",
		"-s R58M1234ABC forward tcp:0 localabstract:chrome_devtools_remote",
		"-s R58M1234ABC forward --remove tcp:41235",
		"-s R58M1234ABC shell am start -n com.android.chrome/com.google.android.apps.chrome.Main -d about:blank",
	}
	if d := cmp.Diff(want, rec.log()); d != "" {
		t.Errorf("adb commands (-want +got):\n%s", d)
	}
	if got := strings.Join(a.Command("devices", "-l"), " "); got != "/opt/android/adb devices -l" {
		t.Errorf("Command: got %q", got)
	}
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"android:R58M1234ABC": "R58M1234ABC", "android:any": Any, "android:192.168.1.5:5555": "192.168.1.5:5555", "android:emulator-5554": "emulator-5554"} {
		if got, err := ParseTarget(name); err != nil || got != want {
			t.Errorf("ParseTarget(%s): got %q, %v", name, got, err)
		}
	}
	for _, bad := range []string{"android:", "pixel-7", "android:R58; rm -rf /", "android:a b", "android:$(id)"} {
		if _, err := ParseTarget(bad); duet.ErrorCode(err) != duet.CodeInvalidArgument {
			t.Errorf("ParseTarget(%q): got %v, want INVALID_ARGUMENT", bad, err)
		}
	}
}

// realADB returns an adb that talks to a server of its own on a free port,
// killed when the test ends, or skips the test when adb is not installed
// (DUET_REQUIRE_ADB=1 makes that a failure).
func realADB(t *testing.T) *ADB {
	t.Helper()
	path, err := exec.LookPath("adb")
	if err != nil {
		if os.Getenv("DUET_REQUIRE_ADB") == "1" {
			t.Fatal("DUET_REQUIRE_ADB=1 but adb is not on PATH (apt-get install -y adb)")
		}
		t.Skip("skipping: adb is not on PATH (apt-get install -y adb; DUET_REQUIRE_ADB=1 fails instead)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	a := &ADB{Path: path, Env: []string{"ANDROID_ADB_SERVER_PORT=" + strconv.Itoa(port)}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.run(ctx, "kill-server")
	})
	return a
}

// TestRealADB runs the real adb binary (Debian's adb package): with no phone
// attached, the list is empty and the messages say what to do.
func TestRealADB(t *testing.T) {
	t.Parallel()
	a := realADB(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	devs, err := a.Devices(ctx)
	if err != nil {
		t.Fatalf("Devices with the real adb: %v", err)
	}
	if len(devs) != 0 {
		t.Skipf("a device is attached to this machine (%+v): the no-device checks do not apply", devs)
	}
	_, err = a.Forward(ctx, "R58M1234ABC")
	if !notFound(err) || !strings.Contains(err.Error(), "R58M1234ABC") {
		t.Errorf("Forward to a phone that is not attached: got %v, want adb's \"device not found\"", err)
	}
	d := New(Options{ADB: a})
	_, err = d.NewSession(ctx, "android:any", netguard.Allowance{})
	if duet.ErrorCode(err) != duet.CodeBrowserUnavailable || !strings.Contains(duet.ErrorMessage(err), "no Android device is attached") ||
		!strings.Contains(duet.ErrorMessage(err), "duet device list") {
		t.Errorf("android:any without a phone: got %v, want BROWSER_UNAVAILABLE saying what to do", err)
	}
}

func TestMissingADB(t *testing.T) {
	t.Parallel()
	a := &ADB{Path: filepath.Join(t.TempDir(), "no-adb")}
	_, err := a.Devices(t.Context())
	if duet.ErrorCode(err) != duet.CodeBrowserUnavailable || !strings.Contains(duet.ErrorMessage(err), "apt-get install -y adb") ||
		!strings.Contains(duet.ErrorMessage(err), "DUET_ADB_PATH") {
		t.Errorf("a missing adb: got %v, want BROWSER_UNAVAILABLE with the install hint", err)
	}
	_, err = New(Options{ADB: a}).NewSession(t.Context(), "android:R58M1234ABC", netguard.Allowance{})
	if duet.ErrorCode(err) != duet.CodeBrowserUnavailable {
		t.Errorf("NewSession with a missing adb: got %v", err)
	}
}
