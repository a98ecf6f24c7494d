package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	for k, v := range map[string]string{"DUET_ADDR": "nope", "DUET_WORKERS": "-1", "DUET_CALL_TIMEOUT": "soon", "DUET_LOG_LEVEL": "loud", "DUET_MCP_ALLOW_PRIVATE": "maybe"} {
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

func TestDatabaseSelection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, engine string
	}{
		{"", EngineSQLite},
		{"/srv/duet/duet.db", EngineSQLite},
		{"sqlite:/srv/duet.db", EngineSQLite},
		{"postgres://duet@db:5432/duet", EnginePostgres},
		{"postgresql://duet@db/duet?sslmode=require", EnginePostgres},
		{"POSTGRES://db/duet", EnginePostgres},
		{"postgres://", EnginePostgres}, // everything from the PG* variables
	} {
		c, err := Load(env(map[string]string{"HOME": "/h", "DUET_DATABASE_URL": tc.url}))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Engine(); got != tc.engine {
			t.Errorf("%q: got %s, want %s", tc.url, got, tc.engine)
		}
		if tc.engine == EnginePostgres {
			if _, err := c.DatabasePath(); err == nil {
				t.Errorf("%q: DatabasePath: got no error", tc.url)
			}
			if d := c.DatabaseDescription(); strings.Contains(d, "duet@") {
				t.Errorf("%q: the description quotes the URL: %s", tc.url, d)
			}
		}
	}
}

func TestDatabaseURLIsASecret(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "url")
	os.WriteFile(f, []byte("postgres://duet:s3cret-pw@db/duet\n"), 0o600)
	c, err := Load(env(map[string]string{"HOME": "/h", "DUET_DATABASE_URL_FILE": f}))
	if err != nil || c.DatabaseURL != "postgres://duet:s3cret-pw@db/duet" || c.Engine() != EnginePostgres {
		t.Fatalf("from a file: got %q %v", c.DatabaseURL, err)
	}
	if !strings.Contains(Markdown(), "`DUET_DATABASE_URL` | `—` |") || !strings.Contains(Markdown(), "secret: never printed") {
		t.Fatal("DUET_DATABASE_URL is not documented as a secret")
	}
}

func TestScaleOutSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"HOME": "/h"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.RunLease != 30*time.Second || c.DBMaxConns != 16 || c.DBConnectTimeout != 5*time.Second || c.ArtifactPath() != filepath.Join(c.Home, "artifacts") {
		t.Fatalf("defaults: lease %s, max conns %d, connect timeout %s, artifacts %s", c.RunLease, c.DBMaxConns, c.DBConnectTimeout, c.ArtifactPath())
	}
	c, err = Load(env(map[string]string{"HOME": "/h", "DUET_ARTIFACT_DIR": "/mnt/shared/artifacts/", "DUET_RUN_LEASE": "5s", "DUET_WORKERS": "0", "DUET_DATABASE_MAX_CONNS": "4"}))
	if err != nil || c.ArtifactPath() != "/mnt/shared/artifacts" || c.RunLease != 5*time.Second || c.Workers != 0 || c.DBMaxConns != 4 {
		t.Fatalf("set: %+v %v", c, err)
	}
	for k, v := range map[string]string{"DUET_ARTIFACT_DIR": "relative/dir", "DUET_RUN_LEASE": "500ms", "DUET_DATABASE_MAX_CONNS": "0", "DUET_DATABASE_CONNECT_TIMEOUT": "soon"} {
		if _, err := Load(env(map[string]string{"HOME": "/h", k: v})); err == nil || !strings.HasPrefix(err.Error(), k+":") {
			t.Errorf("%s=%s: got %v", k, v, err)
		}
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

// TestEveryVariableIsARow: every DUET_* variable the product reads
// (anywhere in its source, not only in Load) is a row of the table, so
// `duet config` and docs/configuration.md are complete. Variables only
// tests read (DUET_TEST_*, DUET_REQUIRE_*, DUET_INTEROP_*) are not
// settings.
func TestEveryVariableIsARow(t *testing.T) {
	t.Parallel()
	rows := map[string]bool{}
	for _, o := range Options() {
		if rows[o.Env] {
			t.Errorf("%s: two rows", o.Env)
		}
		rows[o.Env] = true
		if o.Secret && !o.NoFile {
			rows[o.Env+"_FILE"] = true
		}
	}
	rows["DUET_LLM_API_KEY_FILE"] = true // named in DUET_LLM_API_KEY's row
	name := regexp.MustCompile(`"(DUET_[A-Z0-9_]+)"`)
	root := filepath.Join("..", "..")
	seen := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "bench", "test", "testdata", "node_modules", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte("//go:build conformance")) {
			return nil // test builds only
		}
		for _, m := range name.FindAllSubmatch(b, -1) {
			v := string(m[1])
			seen++
			if strings.HasPrefix(v, "DUET_TEST_") || strings.HasPrefix(v, "DUET_REQUIRE_") || strings.HasPrefix(v, "DUET_INTEROP_") {
				continue
			}
			if !rows[v] {
				t.Errorf("%s reads %s, which has no row in the settings table (config.options)", p, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 30 {
		t.Fatalf("found %d DUET_* names in the source; the walk is broken", seen)
	}
}

// TestSettingsShowEveryRowOnce: duet config's rows are the table's, each
// once, secrets as "(set)" whatever their value, each with its source.
func TestSettingsShowEveryRowOnce(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "keys")
	os.WriteFile(keyFile, []byte("gw-secret-1\n"), 0o600)
	e := map[string]string{"HOME": "/srv/u", "USER": "u", "DUET_WORKERS": "3", "DUET_LLM_API_KEY": "sk-very-secret",
		"DUET_MASTER_KEY": "bWFzdGVyLWtleS1zZWNyZXQ=", "DUET_GATEWAY_API_KEYS_FILE": keyFile}
	c, err := Load(env(e))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Settings(env(e))
	if len(got) != len(Options()) {
		t.Fatalf("got %d settings, want %d", len(got), len(Options()))
	}
	want := map[string]Setting{
		"DUET_HOME":             {"DUET_HOME", filepath.Join("/srv/u", ".local", "share", "duet"), "default"},
		"DUET_USER":             {"DUET_USER", "u", "the operating-system user"},
		"DUET_WORKERS":          {"DUET_WORKERS", "3", "environment"},
		"DUET_PARALLEL":         {"DUET_PARALLEL", "2", "default"},
		"DUET_LLM_API_KEY":      {"DUET_LLM_API_KEY", "(set)", "environment"},
		"DUET_LLM_BASE_URL":     {"DUET_LLM_BASE_URL", "-", "not set"},
		"DUET_LLM_TIMEOUT":      {"DUET_LLM_TIMEOUT", "120s", "default"},
		"DUET_MASTER_KEY":       {"DUET_MASTER_KEY", "(set)", "environment"},
		"DUET_GATEWAY_API_KEYS": {"DUET_GATEWAY_API_KEYS", "(set)", "file " + keyFile},
	}
	for i, s := range got {
		if s.Env != Options()[i].Env {
			t.Errorf("row %d: got %s, want %s", i, s.Env, Options()[i].Env)
		}
		if w, ok := want[s.Env]; ok && s != w {
			t.Errorf("got %+v, want %+v", s, w)
		}
		if s.Value == "" || s.Source == "" || strings.Contains(s.Value, "secret") {
			t.Errorf("%s: got value %q from %q", s.Env, s.Value, s.Source)
		}
	}
}

// TestStopToolSettings: stop_test_run is released to nobody by default;
// DUET_STOP_TOOL_USERS names users, teams and "*", and refuses what is
// neither; a stop request waits 10 minutes unless set.
func TestStopToolSettings(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"HOME": "/h", "USER": "u"}))
	if err != nil || len(c.StopToolUsers) != 0 || c.StopApprovalTTL != 10*time.Minute {
		t.Fatalf("defaults: got %v %v %v", c.StopToolUsers, c.StopApprovalTTL, err)
	}
	c, err = Load(env(map[string]string{"HOME": "/h", "USER": "u", "DUET_STOP_TOOL_USERS": "alice, team:qa,*", "DUET_STOP_APPROVAL_TTL": "2m"}))
	if err != nil || strings.Join(c.StopToolUsers, "|") != "alice|team:qa|*" || c.StopApprovalTTL != 2*time.Minute {
		t.Fatalf("set: got %v %v %v", c.StopToolUsers, c.StopApprovalTTL, err)
	}
	for _, bad := range []string{"team:QA!", "a\x00b", "team:"} {
		if _, err := Load(env(map[string]string{"HOME": "/h", "USER": "u", "DUET_STOP_TOOL_USERS": bad})); err == nil || !strings.HasPrefix(err.Error(), "DUET_STOP_TOOL_USERS:") {
			t.Errorf("DUET_STOP_TOOL_USERS=%q: got %v", bad, err)
		}
	}
}

// TestTraceDomain: DUET_TRACE_DOMAIN lists hosts, *.suffix and *; by
// default no host is in the trace domain.
func TestTraceDomain(t *testing.T) {
	t.Parallel()
	c, err := Load(env(map[string]string{"HOME": "/h"}))
	if err != nil || c.InTraceDomain("127.0.0.1:8080") || c.InTraceDomain("mcp.example.com") {
		t.Fatalf("default: %v, want no host in the trace domain", err)
	}
	c, err = Load(env(map[string]string{"HOME": "/h", "DUET_TRACE_DOMAIN": "orders.internal, *.corp.example.com,[::1],10.0.0.7"}))
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"orders.internal": true, "ORDERS.internal:443": true, "orders.internal.": true,
		"a.corp.example.com": true, "b.a.corp.example.com:8443": true, "corp.example.com": false, "evilcorp.example.com": false,
		"[::1]:9000": true, "10.0.0.7": true, "10.0.0.8": false, "orders.internal.evil.com": false, "": false,
	} {
		if got := c.InTraceDomain(host); got != want {
			t.Errorf("InTraceDomain(%q): got %t, want %t", host, got, want)
		}
	}
	c, _ = Load(env(map[string]string{"HOME": "/h", "DUET_TRACE_DOMAIN": "*"}))
	if !c.InTraceDomain("anything.example:1") {
		t.Errorf("*: want every host")
	}
	for _, bad := range []string{"https://orders.internal", "orders.internal:443", "**.x", "a/b"} {
		if _, err := Load(env(map[string]string{"HOME": "/h", "DUET_TRACE_DOMAIN": bad})); err == nil || !strings.HasPrefix(err.Error(), "DUET_TRACE_DOMAIN:") {
			t.Errorf("%q: got %v, want an error naming the variable", bad, err)
		}
	}
}

// TestMCPFastPath: the MCP fast paths are on unless DUET_MCP_FAST_PATH is
// off; anything but on or off is refused, naming the variable.
func TestMCPFastPath(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"": true, "on": true, "off": false} {
		c, err := Load(env(map[string]string{"HOME": "/h", "DUET_MCP_FAST_PATH": v}))
		if err != nil || c.MCPFastPath != want {
			t.Errorf("DUET_MCP_FAST_PATH=%q: got %v, %v; want %v", v, c != nil && c.MCPFastPath, err, want)
		}
	}
	var cerr *Error
	if _, err := Load(env(map[string]string{"HOME": "/h", "DUET_MCP_FAST_PATH": "false"})); !errors.As(err, &cerr) || cerr.Env != "DUET_MCP_FAST_PATH" {
		t.Errorf("DUET_MCP_FAST_PATH=false: got %v, want an error naming the variable", err)
	}
}

// TestSecretErrorsGiveTheReason: a secret setting that cannot be used says
// why, as other settings do (DUET_SSO_SECRET needs 16 characters), and
// never shows the value: not in the reason of any secret's setter, and not
// even if a reason quoted it.
func TestSecretErrorsGiveTheReason(t *testing.T) {
	t.Parallel()
	const short = "tooShort-9f2"
	_, err := Load(env(map[string]string{"HOME": "/h", "DUET_SSO_USER_HEADER": "X-User", "DUET_SSO_SECRET": short}))
	if err == nil || !strings.HasPrefix(err.Error(), "DUET_SSO_SECRET:") || !strings.Contains(err.Error(), "at least 16 characters") || strings.Contains(err.Error(), short) {
		t.Fatalf("a short DUET_SSO_SECRET: got %v, want the reason (16 characters) without the value", err)
	}
	const bad = "not-a-url-7c41e"
	_, err = Load(env(map[string]string{"HOME": "/h", "DUET_BROWSER_URL": bad}))
	if err == nil || !strings.Contains(err.Error(), "want a ws://") || strings.Contains(err.Error(), bad) {
		t.Fatalf("a bad DUET_BROWSER_URL: got %v, want the reason without the value", err)
	}
	// Every secret's setter, given values it may refuse, never quotes one.
	for _, o := range options {
		if !o.Secret || o.set == nil {
			continue
		}
		for _, v := range []string{"x-canary-51d0", "::x-canary-51d0::", "x-canary-51d0,", "postgres://u:x-canary-51d0@"} {
			if err := o.set(&Config{}, v); err != nil && strings.Contains(err.Error(), "canary") {
				t.Errorf("%s: the reason quotes the secret: %v", o.Env, err)
			}
		}
	}
	// Should a reason ever carry the value, the value is cut out.
	if got := secretError(fmt.Errorf("got %q", "s3cret-value"), "s3cret-value").Error(); strings.Contains(got, "s3cret") {
		t.Fatalf("secretError kept the value: %s", got)
	}
}
