package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"HOME": "/srv/u", "USER": "u"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Home != filepath.Join("/srv/u", ".local", "share", "duet") || c.Addr != "127.0.0.1:8420" || c.User != "u" ||
		c.CallTimeout != 15*time.Second || c.IdempotencyTTL != 24*time.Hour || c.MaxPerCaller != 8 {
		t.Fatalf("defaults: %+v", c)
	}
	p, _ := c.DatabasePath()
	if p != filepath.Join(c.Home, "duet.db") {
		t.Fatalf("database path: got %s", p)
	}
	c, _ = Load(env(map[string]string{"HOME": "/srv/u", "XDG_DATA_HOME": "/x"}))
	if c.Home != "/x/duet" {
		t.Fatalf("XDG: got %s", c.Home)
	}
}

func TestErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	for k, v := range map[string]string{"DUET_ADDR": "nope", "DUET_WORKERS": "0", "DUET_CALL_TIMEOUT": "soon", "DUET_LOG_LEVEL": "loud", "DUET_MCP_ALLOW_PRIVATE": "maybe"} {
		_, err := Load(env(map[string]string{"HOME": "/h", k: v}))
		if err == nil || !strings.HasPrefix(err.Error(), k+":") {
			t.Errorf("%s=%s: got %v", k, v, err)
		}
	}
	_, err := Load(env(map[string]string{"HOME": "/h", "DUET_DATABASE_URL": "postgres://x"}))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := Load(env(map[string]string{"HOME": "/h", "DUET_DATABASE_URL": "relative.db"}))
	if _, err := c.DatabasePath(); err == nil || !strings.Contains(err.Error(), "DUET_DATABASE_URL") {
		t.Errorf("relative database path: got %v", err)
	}
}

func TestSecretsFromFile(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(f, []byte("k1-secret-value\n# old\nk2-secret-value\n"), 0o600)
	c, err := Load(env(map[string]string{"HOME": "/h", "DUET_GATEWAY_API_KEYS_FILE": f}))
	if err != nil || len(c.GatewayAPIKeys) != 2 || c.GatewayAPIKeys[1] != "k2-secret-value" {
		t.Fatalf("got %v %v", c, err)
	}
	_, err = Load(env(map[string]string{"HOME": "/h", "DUET_GATEWAY_API_KEYS_FILE": f, "DUET_GATEWAY_API_KEYS": "x"}))
	if err == nil {
		t.Fatal("both set: got nil")
	}
	if strings.Contains(Markdown(), "k1-secret") || !strings.Contains(Markdown(), "DUET_GATEWAY_API_KEYS") {
		t.Fatal("markdown")
	}
}

func TestDocumentIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/configuration.md")
	if err != nil || string(b) != Document() {
		t.Fatalf("docs/configuration.md is stale; regenerate it: go run ./cmd/duet config --markdown > docs/configuration.md")
	}
}

// TestUserIDsAreValidated: DUET_USER (the identity of stdio callers and CLI
// commands) and DUET_GATEWAY_FIXED_USER follow the one user-id rule of the
// HTTP headers; so does the operating-system user they default to.
func TestUserIDsAreValidated(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"DUET_USER", "DUET_GATEWAY_FIXED_USER"} {
		for _, v := range []string{"a\nb", "a\x00b", strings.Repeat("x", 10000), "a b", "\u200balice"} {
			_, err := Load(env(map[string]string{"HOME": "/h", "USER": "u", k: v}))
			if err == nil || !strings.HasPrefix(err.Error(), k+":") {
				t.Errorf("%s=%q: got %v", k, v, err)
			} else if len(v) > 3 && strings.Contains(err.Error(), v) {
				t.Errorf("%s: the error quotes the value: %v", k, err)
			}
		}
		if _, err := Load(env(map[string]string{"HOME": "/h", "USER": "u", k: "E12345"})); err != nil {
			t.Errorf("%s=E12345: %v", k, err)
		}
	}
	if _, err := Load(env(map[string]string{"HOME": "/h", "USER": "John Doe"})); err == nil || !strings.Contains(err.Error(), "set DUET_USER") {
		t.Errorf("an operating-system user with a space: got %v", err)
	}
	if c, err := Load(env(map[string]string{"HOME": "/h", "USER": "John Doe", "DUET_USER": "jdoe"})); err != nil || c.User != "jdoe" {
		t.Errorf("DUET_USER overrides it: got %v %v", c, err)
	}
}
