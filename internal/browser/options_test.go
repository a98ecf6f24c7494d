package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/duet-test/duet"
)

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Options
		want [3]any // MaxBrowsers, MaxContextsPerBrowser, DefaultTimeout
	}{
		{"zero", Options{}, [3]any{2, 8, 30 * time.Second}},
		{"negative", Options{MaxBrowsers: -1, MaxContextsPerBrowser: -3, DefaultTimeout: -time.Second}, [3]any{2, 8, 30 * time.Second}},
		{"set", Options{MaxBrowsers: 3, MaxContextsPerBrowser: 1, DefaultTimeout: time.Second}, [3]any{3, 1, time.Second}},
	}
	for _, tt := range tests {
		o := tt.in.withDefaults()
		got := [3]any{o.MaxBrowsers, o.MaxContextsPerBrowser, o.DefaultTimeout}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: withDefaults (-want +got):\n%s", tt.name, diff)
		}
		if o.Logger == nil {
			t.Errorf("%s: got a nil Logger, want a discarding one", tt.name)
		}
	}
}

func TestAllocatorFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		flags    map[string]any
		want     []string // switches that must be on the command line
		unwanted []string
		wantCode duet.Code
	}{
		{"defaults", nil, []string{"--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--disable-dev-shm-usage", "--user-data-dir="}, nil, ""},
		{"extra", map[string]any{"lang": "de-DE", "--window-size": "800,600", "remote-allow-origins": 1},
			[]string{"--lang=de-DE", "--window-size=800,600", "--remote-allow-origins=1"}, nil, ""},
		{"remove a default", map[string]any{"mute-audio": false}, nil, []string{"--mute-audio"}, ""},
		{"reserved", map[string]any{"remote-debugging-port": "9222"}, nil, nil, duet.CodeInvalidArgument},
		{"bad value", map[string]any{"x": struct{}{}}, nil, nil, duet.CodeInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := commandLine(Options{Flags: tt.flags}.withDefaults())
			if tt.wantCode != "" {
				wantCode(t, err, tt.wantCode)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, " "+w) {
					t.Errorf("command line %q lacks %q", got, w)
				}
			}
			for _, u := range tt.unwanted {
				if strings.Contains(got, " "+u+" ") {
					t.Errorf("command line %q has %q", got, u)
				}
			}
			if os.Geteuid() == 0 && !strings.Contains(got, " --no-sandbox") {
				t.Errorf("command line %q lacks --no-sandbox as root", got)
			}
		})
	}
}

// commandLine returns the command line that the pool would run, with a space
// at the end, without running Chromium: the executable does not exist.
func commandLine(o Options) (string, error) {
	opts, err := o.allocatorOptions("duet-no-such-chromium", "/tmp/duet-chromium-test")
	if err != nil {
		return "", err
	}
	var args []string
	opts = append(opts, chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) { args = cmd.Args }))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx); err == nil {
		return "", errors.New("a browser started from a missing executable")
	}
	return strings.Join(args, " ") + " ", nil
}

// TestUnwrapLauncher: a shell script whose one command runs a program by
// its absolute path without exec (Debian's /usr/bin/chromium-headless-shell)
// resolves to that program; anything else is run as it is.
func TestUnwrapLauncher(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prog := write("prog", "\x7fELF not a script", 0o755)
	write("plain", "data", 0o644)
	tests := []struct {
		name, text string
		want       string // "" means the script itself
	}{
		{"launcher", "#!/bin/sh -e\n\n" + prog + ` "$@"` + "\n", prog},
		{"comments and blank lines", "#!/bin/sh\n# the shell\n\n  " + prog + ` "$@"  ` + "\n\n", prog},
		{"exec keeps the pid", "#!/bin/sh\nexec " + prog + ` "$@"` + "\n", ""},
		{"more than one command", "#!/bin/sh\nexport X=1\n" + prog + ` "$@"` + "\n", ""},
		{"switches of its own", "#!/bin/sh\n" + prog + ` --flag "$@"` + "\n", ""},
		{"a relative program", "#!/bin/sh\nprog \"$@\"\n", ""},
		{"a missing program", "#!/bin/sh\n" + dir + `/missing "$@"` + "\n", ""},
		{"a program that cannot run", "#!/bin/sh\n" + dir + `/plain "$@"` + "\n", ""},
		{"no shebang", prog + ` "$@"` + "\n", ""},
		{"larger than a launcher", "#!/bin/sh\n" + prog + ` "$@"` + "\n#" + strings.Repeat("x", 5000) + "\n", ""},
	}
	for i, tt := range tests {
		script := write(fmt.Sprintf("script%d", i), tt.text, 0o755)
		want := tt.want
		if want == "" {
			want = script
		}
		if got := unwrapLauncher(script); got != want {
			t.Errorf("%s: unwrapLauncher = %q, want %q", tt.name, got, want)
		}
	}
	if got := unwrapLauncher(prog); got != prog {
		t.Errorf("a binary: unwrapLauncher = %q, want itself", got)
	}
}

// TestFindExecPrefersTheHeadlessShell: with no executable named, the
// headless shell comes before the full browser on PATH.
func TestFindExecPrefersTheHeadlessShell(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"chromium", "chromium-headless-shell"} {
		if err := os.WriteFile(dir+"/"+name, []byte("\x7fELF"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	got, err := findExec("")
	if err != nil || got != dir+"/chromium-headless-shell" {
		t.Errorf("findExec = %q, %v; want the headless shell", got, err)
	}
	if err := os.Remove(dir + "/chromium-headless-shell"); err != nil {
		t.Fatal(err)
	}
	if got, err := findExec(""); err != nil || got != dir+"/chromium" {
		t.Errorf("without the shell: findExec = %q, %v; want chromium", got, err)
	}
}
