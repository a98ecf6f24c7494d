package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/duet-test/duet"
)

// Body size limits: a successful response is decoded whole; of an error
// response only the start is read, for its message.
const (
	maxResponseBody = 16 << 20
	maxErrorBody    = 64 << 10
)

// userAgent identifies Duet to the endpoint.
const userAgent = "duet-llm/1"

// Client sends chat-completions requests to one OpenAI-compatible endpoint.
// It is safe for concurrent use. Clients are cheap and share
// http.DefaultTransport unless Config.HTTPClient says otherwise, so one
// Client per agent generation is a fine way to meter each generation.
//
// A Client prints and logs with the API key redacted.
type Client struct {
	cfg        Config // with defaults applied
	endpoint   string
	maxRetries int
	http       *http.Client
	log        *slog.Logger

	mu    sync.Mutex
	stats Stats
}

// Stats counts what a Client's calls cost, failed calls included.
type Stats struct {
	Calls    int   // Chat calls
	Failures int   // Chat calls that returned an error
	Attempts int   // HTTP requests sent, retries included
	Retries  int   // HTTP requests sent after the first of a call
	Usage    Usage // tokens reported by successful calls
}

// New returns a Client for cfg, applying the documented defaults to zero
// fields.
//
// It returns a *duet.Error with code LLM_NOT_CONFIGURED when cfg.BaseURL or
// cfg.Model is empty, and with code INVALID_ARGUMENT when cfg.BaseURL is not
// an http or https URL, a duration is negative, or the API key holds control
// characters.
func New(cfg Config) (*Client, error) {
	const op = "llm.New"
	if err := cfg.checkConfigured(op); err != nil {
		return nil, err
	}
	endpoint, err := cfg.endpoint(op)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkKey(op); err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 || cfg.RetryBaseWait < 0 || cfg.RetryMaxWait < 0 {
		return nil, &duet.Error{Code: duet.CodeInvalidArgument, Op: op,
			Message: "Timeout, RetryBaseWait and RetryMaxWait must not be negative"}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.RetryBaseWait == 0 {
		cfg.RetryBaseWait = DefaultRetryBaseWait
	}
	if cfg.RetryMaxWait == 0 {
		cfg.RetryMaxWait = DefaultRetryMaxWait
	}
	maxRetries := cfg.MaxRetries
	switch {
	case maxRetries == 0:
		maxRetries = DefaultMaxRetries
	case maxRetries < 0:
		maxRetries = 0
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, endpoint: endpoint, maxRetries: maxRetries, http: hc, log: log}, nil
}

// Stats returns the totals of every Chat call made with c so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// String describes c with the API key redacted.
func (c *Client) String() string { return "llm.Client{" + c.cfg.String() + "}" }

// Format implements fmt.Formatter so that every verb prints the redacted
// String.
func (c *Client) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue implements slog.LogValuer with the API key redacted.
func (c *Client) LogValue() slog.Value { return c.cfg.LogValue() }

// Chat sends req and returns the response, retrying what is worth retrying:
// HTTP 429, 408 and 5xx (but 501) and connections refused, reset or closed
// before a complete response, up to Config.MaxRetries times, waiting with
// exponential backoff and full jitter or as long as Retry-After asks (up to
// Config.RetryMaxWait). Other 4xx statuses are never retried. An empty
// req.Model means Config.Model. The returned response has at least one
// choice; Response.Attempts and Stats count the attempts.
//
// Errors are *duet.Error values with these codes:
//   - INVALID_ARGUMENT: req has no messages or does not encode.
//   - RATE_LIMITED: HTTP 429 after the last retry, or with a Retry-After
//     longer than Config.RetryMaxWait.
//   - TIMEOUT: an attempt ran past Config.Timeout, or ctx's deadline passed.
//   - CANCELLED: ctx was cancelled, during a request or a backoff wait.
//   - LLM_ERROR: any other failure, with the HTTP status and the provider's
//     error message (truncated) when there is one.
//
// Messages never contain the API key; they say how many attempts were made
// when there was more than one.
func (c *Client) Chat(ctx context.Context, req Request) (*Response, error) {
	resp, attempts, err := c.chat(ctx, req)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Calls++
	c.stats.Attempts += attempts
	c.stats.Retries += max(attempts-1, 0)
	if err != nil {
		c.stats.Failures++
	} else {
		c.stats.Usage = c.stats.Usage.Add(resp.Usage)
	}
	return resp, err
}

// failure is why one attempt failed, and whether another may succeed.
type failure struct {
	code    duet.Code
	msg     string // caller-safe
	err     error  // underlying, for logs
	retry   bool
	wait    time.Duration // Retry-After, when hasWait
	hasWait bool
	status  int // HTTP status, 0 when there was no response
}

// chat is Chat without the bookkeeping; it also returns the number of
// attempts made.
func (c *Client) chat(ctx context.Context, req Request) (*Response, int, error) {
	const op = "llm.Client.Chat"
	if req.Model == "" {
		req.Model = c.cfg.Model
	}
	if len(req.Messages) == 0 {
		return nil, 0, &duet.Error{Code: duet.CodeInvalidArgument, Op: op, Message: "the chat request has no messages"}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, &duet.Error{Code: duet.CodeInvalidArgument, Op: op, Err: err,
			Message: "the chat request does not encode as JSON (check the tool parameter schemas)"}
	}
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return nil, attempt - 1, contextFailure(ctx).error(op, attempt-1)
		}
		resp, f := c.try(ctx, body, attempt)
		if f == nil {
			resp.Attempts = attempt
			return resp, attempt, nil
		}
		if !f.retry || attempt > c.maxRetries {
			return nil, attempt, f.error(op, attempt)
		}
		wait := backoff(attempt, c.cfg.RetryBaseWait, c.cfg.RetryMaxWait)
		if f.hasWait {
			if f.wait > c.cfg.RetryMaxWait {
				f.msg += fmt.Sprintf("; not retrying: the endpoint asked to retry after %s, more than the %s limit",
					f.wait.Round(time.Second), c.cfg.RetryMaxWait)
				return nil, attempt, f.error(op, attempt)
			}
			wait = f.wait
		}
		c.log.LogAttrs(ctx, slog.LevelInfo, "llm: retrying chat completion",
			slog.Int("attempt", attempt), slog.Int("status", f.status),
			slog.String("code", string(f.code)), slog.Duration("wait", wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, attempt, contextFailure(ctx).error(op, attempt)
		case <-t.C:
		}
	}
}

// error returns f as the *duet.Error of a call that made attempts attempts.
func (f *failure) error(op string, attempts int) error {
	msg := f.msg
	if attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", attempts)
	}
	return &duet.Error{Code: f.code, Op: op, Message: msg, Err: f.err}
}

// contextFailure reports that the caller's ctx ended: TIMEOUT for a
// deadline, CANCELLED otherwise.
func contextFailure(ctx context.Context) *failure {
	cause := context.Cause(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &failure{code: duet.CodeTimeout, err: cause,
			msg: "the chat completion did not finish before the caller's deadline"}
	}
	return &failure{code: duet.CodeCancelled, err: cause, msg: "the chat completion was cancelled"}
}

// try makes one attempt.
func (c *Client) try(ctx context.Context, body []byte, attempt int) (*Response, *failure) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	start := time.Now()

	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &failure{code: duet.CodeLLMError, msg: "cannot build the chat completion request", err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", userAgent)
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}

	hresp, err := c.http.Do(hreq)
	if err != nil {
		f := c.transportFailure(ctx, actx, err, "cannot reach the LLM endpoint")
		c.logAttempt(ctx, attempt, 0, start, err)
		return nil, f
	}
	defer func() {
		// Drain a little so that the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(hresp.Body, maxErrorBody))
		_ = hresp.Body.Close()
	}()

	ok := hresp.StatusCode >= 200 && hresp.StatusCode < 300
	limit := int64(maxErrorBody)
	if ok {
		limit = maxResponseBody
	}
	data, err := io.ReadAll(io.LimitReader(hresp.Body, limit+1))
	c.logAttempt(ctx, attempt, hresp.StatusCode, start, err)
	if err != nil {
		f := c.transportFailure(ctx, actx, err, fmt.Sprintf("reading the LLM endpoint's HTTP %d response failed", hresp.StatusCode))
		f.status = hresp.StatusCode
		return nil, f
	}
	if !ok {
		return nil, c.httpFailure(hresp, data)
	}
	if int64(len(data)) > limit {
		return nil, &failure{code: duet.CodeLLMError, status: hresp.StatusCode,
			msg: fmt.Sprintf("the LLM endpoint's response is larger than %d MiB", limit>>20)}
	}
	resp, err := decodeResponse(data)
	if err == nil {
		return resp, nil
	}
	f := &failure{code: duet.CodeLLMError, status: hresp.StatusCode}
	var pe *providerError
	switch {
	case errors.As(err, &pe):
		f.msg = "the LLM endpoint returned an error: " + sanitize(pe.text, c.cfg.APIKey, maxProviderText)
	case errors.Is(err, errNoChoices):
		f.msg = "the LLM endpoint's response has no choices"
	default:
		f.msg = "the LLM endpoint's response is not a chat completion"
		if ct := hresp.Header.Get("Content-Type"); ct != "" {
			f.msg += " (Content-Type " + sanitize(ct, c.cfg.APIKey, 60) + "; check " + EnvBaseURL + ")"
		}
		f.err = err
	}
	return nil, f
}

// transportFailure classifies an error from sending a request or reading
// its response.
func (c *Client) transportFailure(ctx, actx context.Context, err error, msg string) *failure {
	switch {
	case ctx.Err() != nil:
		return contextFailure(ctx)
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		return &failure{code: duet.CodeTimeout, err: err, msg: fmt.Sprintf(
			"the LLM endpoint did not answer within %s (raise %s for slow models)", c.cfg.Timeout, EnvTimeout)}
	case isTimeout(err):
		return &failure{code: duet.CodeTimeout, err: err, msg: "the LLM endpoint timed out"}
	}
	return &failure{code: duet.CodeLLMError, err: err, retry: retryableTransport(err),
		msg: fmt.Sprintf("%s at %s", msg, redactURL(c.endpoint))}
}

// httpFailure describes a non-2xx response.
func (c *Client) httpFailure(resp *http.Response, body []byte) *failure {
	status := resp.StatusCode
	f := &failure{code: duet.CodeLLMError, status: status}
	f.msg = fmt.Sprintf("the LLM endpoint returned HTTP %d", status)
	if text := http.StatusText(status); text != "" {
		f.msg += " " + text
	}
	if text := errorText(body); text != "" {
		f.msg += ": " + sanitize(text, c.cfg.APIKey, maxProviderText)
	} else if snippet := bytes.TrimSpace(body); len(snippet) > 0 && snippet[0] != '<' {
		f.msg += ": " + sanitize(string(snippet), c.cfg.APIKey, 200)
	}
	switch {
	case status == http.StatusTooManyRequests:
		f.code = duet.CodeRateLimited
		// A spent quota does not come back in a few seconds.
		f.retry = errorCode(body) != "insufficient_quota"
	case status == http.StatusRequestTimeout:
		f.retry = true
	case status >= 500:
		f.retry = status != http.StatusNotImplemented
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		f.msg += fmt.Sprintf("; check %s or %s", EnvAPIKey, EnvAPIKeyFile)
	case status == http.StatusNotFound:
		f.msg += fmt.Sprintf("; check %s and %s", EnvBaseURL, EnvModel)
	case status >= 300 && status < 400:
		if loc := resp.Header.Get("Location"); loc != "" {
			f.msg += fmt.Sprintf("; it redirects to %s: set %s to the final URL", sanitize(redactURL(loc), c.cfg.APIKey, 200), EnvBaseURL)
		}
	}
	if f.retry {
		f.wait, f.hasWait = retryAfter(resp.Header, time.Now())
	}
	return f
}

// logAttempt records one attempt at debug level: never bodies or headers.
func (c *Client) logAttempt(ctx context.Context, attempt, status int, start time.Time, err error) {
	if !c.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.Int("attempt", attempt),
		slog.Int("status", status),
		slog.Duration("duration", time.Since(start)),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "llm: chat completion attempt", attrs...)
}
