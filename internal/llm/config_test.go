package llm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/llm"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// testKey is a fake API key that must never be printed.
const testKey = "sk-test-7f3a9c1e5b2d4f6a8c0e"

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte("  "+testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"DUET_LLM_BASE_URL": "https://api.openai.com/v1", "DUET_LLM_MODEL": "gpt-4.1-mini"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	tests := []struct {
		name     string
		env      map[string]string
		want     llm.Config
		wantCode duet.Code
		wantText []string // substrings of the error message
	}{
		{
			name: "minimal, no key (local server)",
			env:  map[string]string{"DUET_LLM_BASE_URL": "http://127.0.0.1:11434/v1/", "DUET_LLM_MODEL": "qwen3:8b"},
			want: llm.Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen3:8b"},
		},
		{
			name: "key and timeout",
			env:  with("DUET_LLM_API_KEY", testKey, "DUET_LLM_TIMEOUT", "90s"),
			want: llm.Config{BaseURL: "https://api.openai.com/v1", Model: "gpt-4.1-mini", APIKey: testKey, Timeout: 90 * time.Second},
		},
		{
			name: "key file trimmed",
			env:  with("DUET_LLM_API_KEY_FILE", keyFile),
			want: llm.Config{BaseURL: "https://api.openai.com/v1", Model: "gpt-4.1-mini", APIKey: testKey},
		},
		{
			name:     "nothing set",
			env:      map[string]string{},
			wantCode: duet.CodeLLMNotConfigured,
			wantText: []string{"DUET_LLM_BASE_URL", "DUET_LLM_MODEL", "DUET_LLM_API_KEY", "DUET_LLM_API_KEY_FILE", "missing DUET_LLM_BASE_URL and DUET_LLM_MODEL"},
		},
		{
			name:     "model missing",
			env:      map[string]string{"DUET_LLM_BASE_URL": "http://127.0.0.1:11434/v1", "DUET_LLM_API_KEY": testKey},
			wantCode: duet.CodeLLMNotConfigured,
			wantText: []string{"missing DUET_LLM_MODEL)", "DUET_LLM_BASE_URL"},
		},
		{
			name:     "key and key file",
			env:      with("DUET_LLM_API_KEY", testKey, "DUET_LLM_API_KEY_FILE", keyFile),
			wantCode: duet.CodeInvalidArgument,
			wantText: []string{"set only one"},
		},
		{
			name:     "key file missing",
			env:      with("DUET_LLM_API_KEY_FILE", filepath.Join(dir, "nope")),
			wantCode: duet.CodeInvalidArgument,
			wantText: []string{"DUET_LLM_API_KEY_FILE"},
		},
		{
			name:     "key file empty",
			env:      with("DUET_LLM_API_KEY_FILE", emptyFile),
			wantCode: duet.CodeInvalidArgument,
			wantText: []string{"is empty"},
		},
		{
			name:     "bad timeout",
			env:      with("DUET_LLM_TIMEOUT", "120"),
			wantCode: duet.CodeInvalidArgument,
			wantText: []string{"DUET_LLM_TIMEOUT", "90s"},
		},
		{
			name:     "not a URL",
			env:      with("DUET_LLM_BASE_URL", "api.openai.com/v1"),
			wantCode: duet.CodeInvalidArgument,
			wantText: []string{"DUET_LLM_BASE_URL"},
		},
		{
			name:     "password in a bad URL is not echoed",
			env:      with("DUET_LLM_BASE_URL", "ftp://user:hunter2@host/v1"),
			wantCode: duet.CodeInvalidArgument,
			wantText: []string{"ftp://user:xxxxx@host/v1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := llm.ConfigFromEnv(env(tt.env))
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("ConfigFromEnv: got code %q (error %v), want %q", code, err, tt.wantCode)
			}
			if err != nil {
				for _, s := range tt.wantText {
					if msg := duet.ErrorMessage(err); !strings.Contains(msg, s) {
						t.Errorf("ConfigFromEnv: got message %q, want it to contain %q", msg, s)
					}
				}
				for _, secret := range []string{testKey, "hunter2"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("ConfigFromEnv: got error %q, want no secret in it", err)
					}
				}
				return
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(llm.Config{}, "HTTPClient", "Logger")); diff != "" {
				t.Errorf("ConfigFromEnv mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      llm.Config
		wantCode duet.Code
		wantText string
	}{
		{"zero config", llm.Config{}, duet.CodeLLMNotConfigured, "DUET_LLM_BASE_URL"},
		{"no model", llm.Config{BaseURL: "http://127.0.0.1:1/v1"}, duet.CodeLLMNotConfigured, "DUET_LLM_MODEL"},
		{"bad scheme", llm.Config{BaseURL: "unix:///tmp/x", Model: "m"}, duet.CodeInvalidArgument, "http or https"},
		{"negative timeout", llm.Config{BaseURL: "http://h/v1", Model: "m", Timeout: -time.Second}, duet.CodeInvalidArgument, "negative"},
		{"control character in key", llm.Config{BaseURL: "http://h/v1", Model: "m", APIKey: testKey + "\n"}, duet.CodeInvalidArgument, "control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := llm.New(tt.cfg)
			if c != nil {
				t.Errorf("New: got client %v, want nil", c)
			}
			if code := duet.ErrorCode(err); code != tt.wantCode {
				t.Fatalf("New: got code %q (error %v), want %q", code, err, tt.wantCode)
			}
			if msg := duet.ErrorMessage(err); !strings.Contains(msg, tt.wantText) {
				t.Errorf("New: got message %q, want it to contain %q", msg, tt.wantText)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("New: got error %q, want no API key in it", err)
			}
		})
	}
}

// TestSecretsNotPrinted checks every way a Config or Client may end up in
// a log or a message.
func TestSecretsNotPrinted(t *testing.T) {
	t.Parallel()
	cfg := llm.Config{BaseURL: "https://user:hunter2@llm.example/v1", Model: "m", APIKey: testKey}
	client, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, v := range []any{cfg, &cfg, client, []llm.Config{cfg}, struct{ C llm.Config }{cfg}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			outputs = append(outputs, verb+" "+fmt.Sprintf(verb, v))
		}
	}
	outputs = append(outputs, "String "+cfg.String(), "Client.String "+client.String())
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		slog.New(h).Info("config", "cfg", cfg, "client", client, "ptr", &cfg)
	}
	outputs = append(outputs, "slog "+buf.String())
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, "json "+string(data))

	for _, out := range outputs {
		for _, secret := range []string{testKey, "hunter2"} {
			if strings.Contains(out, secret) {
				t.Errorf("got %s, want no %q in it", out, secret)
			}
		}
	}
	if s := cfg.String(); !strings.Contains(s, "[REDACTED]") || !strings.Contains(s, `Model: "m"`) {
		t.Errorf(`String: got %s, want the model and "[REDACTED]"`, s)
	}
	if s := (llm.Config{}).String(); !strings.Contains(s, `APIKey: ""`) {
		t.Errorf(`String of a keyless config: got %s, want APIKey: ""`, s)
	}
}
