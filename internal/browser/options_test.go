package browser

import (
	"context"
	"errors"
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
