package app

import (
	"testing"

	"github.com/duet-test/duet/internal/config"
)

// TestBrowserSandboxSetting: DUET_BROWSER_SANDBOX=off starts Chromium with
// --no-sandbox (where seccomp or AppArmor forbid the user namespaces its
// sandbox needs: docs/deployment.md); on, the default, adds nothing.
func TestBrowserSandboxSetting(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value string
		want  bool
	}{{"", false}, {"on", false}, {"off", true}} {
		cfg, err := config.Load(func(k string) string {
			switch k {
			case "DUET_HOME":
				return t.TempDir()
			case "DUET_BROWSER_SANDBOX":
				return c.value
			}
			return ""
		})
		if err != nil {
			t.Fatal(err)
		}
		o := browserOptions(cfg, nil, 1, nil)
		if got := o.Flags["no-sandbox"] == true; got != c.want {
			t.Errorf("DUET_BROWSER_SANDBOX=%q: --no-sandbox %v, want %v (flags %v)", c.value, got, c.want, o.Flags)
		}
	}
	if _, err := config.Load(func(k string) string {
		return map[string]string{"DUET_HOME": "/h", "DUET_BROWSER_SANDBOX": "false"}[k]
	}); err == nil {
		t.Error("DUET_BROWSER_SANDBOX=false: want an error naming on and off")
	}
}
