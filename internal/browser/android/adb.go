// Package android runs Duet's browser sessions in Chrome on Android phones,
// over adb: it lists the phones (`adb devices -l`, `adb shell getprop`),
// forwards a phone's Chrome DevTools socket to a local port (`adb forward
// tcp:0 localabstract:chrome_devtools_remote`), and attaches the browser
// package's remote driver to it: a fresh tab per execution, closed after,
// screenshots from the phone. A phone is held by one execution at a time
// across every Duet process on the same store (duet.DeviceLeaseStore); a
// phone that disconnects mid-run fails that execution with DEVICE_LOST and
// is freed.
package android

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/duet-test/duet"
)

// DevToolsSocket is the abstract socket on which Chrome for Android accepts
// DevTools connections when USB debugging is on.
const DevToolsSocket = "localabstract:chrome_devtools_remote"

// installHint tells the user how to get adb.
const installHint = "install adb (apt-get install -y adb) or set DUET_ADB_PATH"

// ADB runs adb commands. The zero value runs "adb" from PATH.
type ADB struct {
	// Path is the adb executable: a path, or a name looked up on PATH.
	// Empty means "adb". This package reads no environment variable: the
	// caller resolves DUET_ADB_PATH into this field.
	Path string
	// Env is added to the environment of adb (for example
	// ANDROID_ADB_SERVER_PORT=5038 or ANDROID_SERIAL); nil adds nothing.
	Env []string
	// Run, when set, runs adb instead of the executable: it gets the
	// arguments after "adb" and returns the standard output. Tests use it
	// to replay output recorded from real phones.
	Run func(ctx context.Context, args ...string) ([]byte, error)
}

// Command returns the command line that runs adb with args, for messages
// and tests.
func (a *ADB) Command(args ...string) []string {
	return append([]string{a.path()}, args...)
}

func (a *ADB) path() string {
	if a.Path != "" {
		return a.Path
	}
	return "adb"
}

// run runs adb with args. A missing adb is CodeBrowserUnavailable with the
// install hint; a failing adb is an error that ends with adb's own last
// words ("adb: error: device 'X' not found").
func (a *ADB) run(ctx context.Context, args ...string) ([]byte, error) {
	if a.Run != nil {
		return a.Run(ctx, args...)
	}
	path, err := exec.LookPath(a.path())
	if err != nil {
		return nil, duet.WrapError(duet.CodeBrowserUnavailable, err, "adb not found (%s): %s", a.path(), installHint)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	if len(a.Env) > 0 {
		cmd.Env = append(os.Environ(), a.Env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 0
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return stdout.Bytes(), &Error{Args: args, Msg: lastLine(stderr.String(), stdout.String()), Err: err}
	}
	return stdout.Bytes(), nil
}

// Error is a failed adb command.
type Error struct {
	Args []string // after "adb"
	Msg  string   // adb's last line on stderr, such as "adb: error: device 'X' not found"
	Err  error
}

func (e *Error) Error() string {
	msg := e.Msg
	if msg == "" {
		msg = e.Err.Error()
	}
	return "adb " + strings.Join(e.Args, " ") + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// lastLine returns the last non-empty line of the first text that has one,
// without the "* daemon ..." lines adb prints when it starts its server.
func lastLine(texts ...string) string {
	for _, t := range texts {
		lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(t, "\r", "")), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "* ") {
				return l
			}
		}
	}
	return ""
}

// Device is a phone or emulator that adb lists.
type Device struct {
	Serial      string `json:"serial"`
	State       string `json:"state"`                 // device, unauthorized, offline, no permissions, ...
	Model       string `json:"model,omitempty"`       // "Pixel 7" (getprop), else adb's "Pixel_7" with spaces
	Product     string `json:"product,omitempty"`     // "panther"
	DeviceName  string `json:"deviceName,omitempty"`  // "panther"
	USB         string `json:"usb,omitempty"`         // "1-4"; empty over TCP/IP
	TransportID string `json:"transportId,omitempty"` // "3"
	Android     string `json:"android,omitempty"`     // "14" (ro.build.version.release)
	SDK         string `json:"sdk,omitempty"`         // "34" (ro.build.version.sdk)
}

// Ready reports whether adb can use the device ("device" state).
func (d Device) Ready() bool { return d.State == "device" }

// Name is how messages name the device: "Android device SERIAL (MODEL)".
func (d Device) Name() string {
	if d.Model != "" {
		return fmt.Sprintf("Android device %s (%s)", d.Serial, d.Model)
	}
	return "Android device " + d.Serial
}

// Problem explains, for a person, why a device that is not ready cannot be
// used; "" for a ready one.
func (d Device) Problem() string {
	switch {
	case d.Ready():
		return ""
	case d.State == "unauthorized":
		return "unlock the phone and accept the \"Allow USB debugging?\" prompt"
	case d.State == "offline":
		return "adb lost it: unplug and plug it again, or run adb kill-server"
	case strings.HasPrefix(d.State, "no permissions"):
		return "this user may not open the USB device: add a udev rule (Debian: apt-get install -y android-sdk-platform-tools-common) and plug it again"
	case d.State == "recovery", d.State == "bootloader", d.State == "sideload":
		return "it is in " + d.State + " mode: boot it into Android"
	}
	return "adb reports it " + d.State
}

// known device states of `adb devices`, as adb's source spells them.
var states = []string{"device", "offline", "unauthorized", "bootloader", "recovery", "sideload", "rescue", "authorizing", "connecting", "host", "unknown", "detached"}

// ParseDevices parses the output of `adb devices -l`. It skips the header,
// the "* daemon ..." lines and other chatter of a restarting server, and
// returns the devices sorted by serial.
func ParseDevices(out []byte) []Device {
	var devs []Device
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" || strings.HasPrefix(line, "*") || strings.HasPrefix(line, "List of devices") || strings.HasPrefix(line, "adb ") {
			continue
		}
		serial, rest, ok := strings.Cut(line, "\t")
		if !ok {
			serial, rest, ok = strings.Cut(line, " ")
		}
		if !ok || serial == "" {
			continue
		}
		rest = strings.TrimSpace(rest)
		d := Device{Serial: serial}
		switch {
		case strings.HasPrefix(rest, "no permissions"):
			// "no permissions (...); see [URL]" then the key:value pairs.
			d.State = "no permissions"
			if i := strings.LastIndex(rest, "]"); i >= 0 {
				rest = rest[i+1:]
			} else if i := strings.LastIndex(rest, ")"); i >= 0 {
				rest = rest[i+1:]
			} else {
				rest = ""
			}
		default:
			state, tail, _ := strings.Cut(rest, " ")
			if !isState(state) {
				continue // not a device line
			}
			d.State, rest = state, tail
		}
		for f := range strings.FieldsSeq(rest) {
			k, v, ok := strings.Cut(f, ":")
			if !ok {
				continue
			}
			switch k {
			case "usb":
				d.USB = v
			case "product":
				d.Product = v
			case "model":
				d.Model = strings.ReplaceAll(v, "_", " ")
			case "device":
				d.DeviceName = v
			case "transport_id":
				d.TransportID = v
			}
		}
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Serial < devs[j].Serial })
	return devs
}

func isState(s string) bool {
	for _, st := range states {
		if s == st {
			return true
		}
	}
	return false
}

var propLine = regexp.MustCompile(`^\[([^\]]+)\]: \[(.*)\]$`)

// ParseProps parses the output of `adb shell getprop`: lines of the form
// "[ro.product.model]: [Pixel 7]". Values that span lines are skipped.
func ParseProps(out []byte) map[string]string {
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := propLine.FindStringSubmatch(strings.TrimSuffix(sc.Text(), "\r")); m != nil {
			props[m[1]] = m[2]
		}
	}
	return props
}

// Devices lists the devices adb sees (`adb devices -l`), with the model and
// Android version of each ready one (`adb -s SERIAL shell getprop`). A
// device whose properties cannot be read keeps what `adb devices -l` says.
// Returns CodeBrowserUnavailable when adb is missing or its server does not
// start.
func (a *ADB) Devices(ctx context.Context) ([]Device, error) {
	devs, err := a.list(ctx)
	if err != nil {
		return nil, err
	}
	for i := range devs {
		if devs[i].Ready() {
			a.props(ctx, &devs[i])
		}
	}
	return devs, nil
}

// props fills the model and Android version of d from `adb -s SERIAL shell
// getprop`; d keeps what it has when they cannot be read.
func (a *ADB) props(ctx context.Context, d *Device) {
	out, err := a.run(ctx, "-s", d.Serial, "shell", "getprop")
	if err != nil {
		return
	}
	p := ParseProps(out)
	if m := p["ro.product.model"]; m != "" {
		d.Model = m
	}
	d.Android, d.SDK = p["ro.build.version.release"], p["ro.build.version.sdk"]
}

// list runs `adb devices -l`.
func (a *ADB) list(ctx context.Context) ([]Device, error) {
	out, err := a.run(ctx, "devices", "-l")
	if err != nil {
		if duet.ErrorCode(err) == duet.CodeBrowserUnavailable || ctx.Err() != nil {
			return nil, err
		}
		return nil, duet.WrapError(duet.CodeBrowserUnavailable, err, "adb cannot list devices: %v", err)
	}
	return ParseDevices(out), nil
}

// Forward forwards a free local TCP port to the Chrome DevTools socket of the
// device (`adb -s SERIAL forward tcp:0 localabstract:chrome_devtools_remote`)
// and returns the port.
func (a *ADB) Forward(ctx context.Context, serial string) (int, error) {
	out, err := a.run(ctx, "-s", serial, "forward", "tcp:0", DevToolsSocket)
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(strings.TrimSpace(lastLine(string(out))))
	if err != nil || port <= 0 || port > 65535 {
		return 0, fmt.Errorf("adb forward printed %q, not a port", strings.TrimSpace(string(out)))
	}
	return port, nil
}

// Unforward removes the forward of port (`adb -s SERIAL forward --remove
// tcp:PORT`).
func (a *ADB) Unforward(ctx context.Context, serial string, port int) error {
	_, err := a.run(ctx, "-s", serial, "forward", "--remove", "tcp:"+strconv.Itoa(port))
	return err
}

// StartChrome brings Chrome to the front of the device, which opens its
// DevTools socket (`adb -s SERIAL shell am start -n
// com.android.chrome/com.google.android.apps.chrome.Main -d about:blank`).
func (a *ADB) StartChrome(ctx context.Context, serial string) error {
	_, err := a.run(ctx, "-s", serial, "shell", "am", "start", "-n", "com.android.chrome/com.google.android.apps.chrome.Main", "-d", "about:blank")
	return err
}

// notFound reports whether err says that adb does not know the device.
func notFound(err error) bool {
	var ae *Error
	return errors.As(err, &ae) && (strings.Contains(ae.Msg, "not found") || strings.Contains(ae.Msg, "no devices"))
}
