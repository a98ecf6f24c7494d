package llm

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// Defaults that New applies to zero Config fields.
const (
	DefaultTimeout       = 120 * time.Second
	DefaultMaxRetries    = 4
	DefaultRetryBaseWait = 500 * time.Millisecond
	DefaultRetryMaxWait  = 60 * time.Second
)

// Environment variables read by ConfigFromEnv.
const (
	EnvBaseURL    = "DUET_LLM_BASE_URL"
	EnvAPIKey     = "DUET_LLM_API_KEY"
	EnvAPIKeyFile = "DUET_LLM_API_KEY_FILE"
	EnvModel      = "DUET_LLM_MODEL"
	EnvTimeout    = "DUET_LLM_TIMEOUT"
)

// redacted replaces secrets wherever a Config, Client or error is printed.
const redacted = "[REDACTED]"

// Config configures a Client. BaseURL and Model are required; every other
// field has a usable zero value.
//
// Config prints (with any fmt verb), logs (as a slog.LogValuer) and
// encodes to JSON with the API key, and any password in BaseURL, redacted.
type Config struct {
	// BaseURL is the API root, for example https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1 for Ollama. Requests go to
	// BaseURL + "/chat/completions"; a trailing slash, or a trailing
	// "/chat/completions" pasted by mistake, is ignored. A query string (such
	// as Azure's api-version) is kept.
	BaseURL string

	// APIKey is sent as "Authorization: Bearer <APIKey>". Empty means no
	// Authorization header, which local servers accept.
	APIKey string

	// Model is the default model, used when Request.Model is empty.
	Model string

	// Timeout bounds each attempt, from sending the request to reading the
	// whole response. Zero means DefaultTimeout (120s). An attempt that times
	// out is not retried: a model too slow once is usually too slow again.
	Timeout time.Duration

	// MaxRetries is how many times a failed attempt is retried. Zero means
	// DefaultMaxRetries (4); a negative value means no retries.
	MaxRetries int

	// RetryBaseWait is the backoff ceiling before the first retry; it doubles
	// with every retry, and the actual wait is drawn uniformly from zero to
	// the ceiling (full jitter). Zero means DefaultRetryBaseWait (500ms).
	RetryBaseWait time.Duration

	// RetryMaxWait caps the backoff ceiling, and is the longest Retry-After
	// that is honoured: when the endpoint asks for a longer wait, Chat stops
	// retrying and returns the error at once. Zero means DefaultRetryMaxWait
	// (60s).
	RetryMaxWait time.Duration

	// HTTPClient sends the requests. Nil means a client on
	// http.DefaultTransport that does not follow redirects (a redirected
	// POST would silently become a GET). Its Timeout, if any, applies on top
	// of Timeout.
	HTTPClient *http.Client

	// Logger receives one debug record per attempt (status, attempt,
	// duration) and one info record per retry; never bodies or the API key.
	// Nil means no logging.
	Logger *slog.Logger
}

// ConfigFromEnv returns the Config described by the DUET_LLM_* environment
// variables, looked up with getenv (os.Getenv in production):
//
//   - DUET_LLM_BASE_URL (required), e.g. https://api.openai.com/v1
//   - DUET_LLM_MODEL (required), e.g. gpt-4.1-mini or qwen3:8b
//   - DUET_LLM_API_KEY, or DUET_LLM_API_KEY_FILE naming a file that holds
//     the key (surrounding white space is trimmed); optional for local
//     servers, and setting both is an error
//   - DUET_LLM_TIMEOUT, a Go duration such as 90s or 5m (optional)
//
// It returns a *duet.Error with code LLM_NOT_CONFIGURED, naming the
// variables to set, when the base URL or the model is missing, and one with
// code INVALID_ARGUMENT when a variable is malformed or the key file cannot
// be read. Errors never contain the key.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	const op = "llm.ConfigFromEnv"
	cfg := Config{
		BaseURL: strings.TrimSpace(getenv(EnvBaseURL)),
		Model:   strings.TrimSpace(getenv(EnvModel)),
	}
	if err := cfg.checkConfigured(op); err != nil {
		return Config{}, err
	}

	key, keyFile := strings.TrimSpace(getenv(EnvAPIKey)), strings.TrimSpace(getenv(EnvAPIKeyFile))
	switch {
	case key != "" && keyFile != "":
		return Config{}, &duet.Error{Code: duet.CodeInvalidArgument, Op: op,
			Message: fmt.Sprintf("both %s and %s are set; set only one", EnvAPIKey, EnvAPIKeyFile)}
	case keyFile != "":
		data, err := os.ReadFile(keyFile)
		if err != nil {
			return Config{}, &duet.Error{Code: duet.CodeInvalidArgument, Op: op, Err: err,
				Message: fmt.Sprintf("cannot read the API key file named by %s", EnvAPIKeyFile)}
		}
		key = strings.TrimSpace(string(data))
		if key == "" {
			return Config{}, &duet.Error{Code: duet.CodeInvalidArgument, Op: op,
				Message: fmt.Sprintf("the API key file named by %s is empty", EnvAPIKeyFile)}
		}
	}
	cfg.APIKey = key

	if s := strings.TrimSpace(getenv(EnvTimeout)); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return Config{}, &duet.Error{Code: duet.CodeInvalidArgument, Op: op,
				Message: fmt.Sprintf("%s=%q is not a positive Go duration such as 90s or 5m", EnvTimeout, s)}
		}
		cfg.Timeout = d
	}

	if _, err := cfg.endpoint(op); err != nil {
		return Config{}, err
	}
	if err := cfg.checkKey(op); err != nil {
		return Config{}, err
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return cfg, nil
}

// checkConfigured returns an LLM_NOT_CONFIGURED error when BaseURL or Model
// is empty.
func (c Config) checkConfigured(op string) error {
	var missing []string
	if strings.TrimSpace(c.BaseURL) == "" {
		missing = append(missing, EnvBaseURL)
	}
	if strings.TrimSpace(c.Model) == "" {
		missing = append(missing, EnvModel)
	}
	if len(missing) == 0 {
		return nil
	}
	return &duet.Error{Code: duet.CodeLLMNotConfigured, Op: op, Message: fmt.Sprintf(
		"no LLM is configured (missing %s): set %s to an OpenAI-compatible API root "+
			"(for example https://api.openai.com/v1, or http://127.0.0.1:11434/v1 for Ollama) and %s to a model name, "+
			"and %s or %s if the endpoint needs an API key",
		strings.Join(missing, " and "), EnvBaseURL, EnvModel, EnvAPIKey, EnvAPIKeyFile)}
}

// endpoint returns the chat-completions URL for c.BaseURL, or an
// INVALID_ARGUMENT error.
func (c Config) endpoint(op string) (string, error) {
	base := strings.TrimSpace(c.BaseURL)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return "", &duet.Error{Code: duet.CodeInvalidArgument, Op: op, Message: fmt.Sprintf(
			"%s=%q is not an http or https URL such as https://api.openai.com/v1", EnvBaseURL, redactURL(base))}
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/chat/completions")
	u.Path = p + "/chat/completions"
	u.RawPath = ""
	return u.String(), nil
}

// checkKey rejects keys that cannot travel in an HTTP header, without
// echoing them.
func (c Config) checkKey(op string) error {
	for i := 0; i < len(c.APIKey); i++ {
		if b := c.APIKey[i]; b < 0x20 || b == 0x7f {
			return &duet.Error{Code: duet.CodeInvalidArgument, Op: op,
				Message: "the API key contains control characters"}
		}
	}
	return nil
}

// String returns c in Go-like syntax with the API key redacted.
func (c Config) String() string {
	return fmt.Sprintf("llm.Config{BaseURL: %q, Model: %q, APIKey: %s, Timeout: %v, MaxRetries: %d}",
		redactURL(c.BaseURL), c.Model, redactKey(c.APIKey), c.Timeout, c.MaxRetries)
}

// GoString returns the same text as String, so %#v redacts the key too.
func (c Config) GoString() string { return c.String() }

// Format implements fmt.Formatter so that every verb, not only %v and %s,
// prints the redacted String.
func (c Config) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue implements slog.LogValuer with the API key redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", redactURL(c.BaseURL)),
		slog.String("model", c.Model),
		slog.String("api_key", redactKey(c.APIKey)),
		slog.Duration("timeout", c.Timeout),
		slog.Int("max_retries", c.MaxRetries),
	)
}

// MarshalJSON encodes c for display, with the API key redacted.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		BaseURL    string `json:"base_url"`
		Model      string `json:"model"`
		APIKey     string `json:"api_key"`
		Timeout    string `json:"timeout"`
		MaxRetries int    `json:"max_retries"`
	}{redactURL(c.BaseURL), c.Model, strings.Trim(redactKey(c.APIKey), `"`), c.Timeout.String(), c.MaxRetries})
}

// redactKey says whether a key is set without showing it.
func redactKey(key string) string {
	if key == "" {
		return `""`
	}
	return redacted
}

// redactURL hides a password in the URL's user information, and the whole
// text of an unparsable URL that might hold one.
func redactURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil && strings.Contains(s, "@"):
		return redacted
	case err != nil || u.User == nil:
		return s
	}
	return u.Redacted()
}
