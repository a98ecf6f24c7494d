package llm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{name: "none", header: http.Header{}},
		{name: "seconds", header: http.Header{"Retry-After": {"2"}}, want: 2 * time.Second, wantOK: true},
		{name: "fractional seconds", header: http.Header{"Retry-After": {"1.5"}}, want: 1500 * time.Millisecond, wantOK: true},
		{name: "zero", header: http.Header{"Retry-After": {"0"}}, want: 0, wantOK: true},
		{name: "http date", header: http.Header{"Retry-After": {now.Add(10 * time.Second).Format(http.TimeFormat)}},
			want: 10 * time.Second, wantOK: true},
		{name: "past date", header: http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}},
			want: 0, wantOK: true},
		{name: "milliseconds first", header: http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}},
			want: 250 * time.Millisecond, wantOK: true},
		{name: "bad milliseconds fall back", header: http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"1"}},
			want: time.Second, wantOK: true},
		{name: "negative", header: http.Header{"Retry-After": {"-3"}}},
		{name: "garbage", header: http.Header{"Retry-After": {"tomorrow"}}},
		{name: "huge", header: http.Header{"Retry-After": {"1e300"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := retryAfter(tt.header, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("retryAfter(%v): got %v, %v, want %v, %v", tt.header, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	const base, maxWait = 100 * time.Millisecond, 2 * time.Second
	for n := 1; n <= 70; n++ {
		ceil := maxWait
		if n <= 5 {
			ceil = base << (n - 1)
		}
		for range 50 {
			if got := backoff(n, base, maxWait); got < 0 || got > ceil {
				t.Fatalf("backoff(%d): got %v, want within [0, %v]", n, got, ceil)
			}
		}
	}
	if got := backoff(1, 0, 0); got != 0 {
		t.Errorf("backoff with zero limits: got %v, want 0", got)
	}
}

func TestRetryableTransport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{fmt.Errorf("Post: %w", io.EOF), true},
		{io.ErrUnexpectedEOF, true},
		{&net.DNSError{Err: "server misbehaving", IsTemporary: true}, true},
		{&net.DNSError{Err: "no such host", IsNotFound: true}, false},
		{errors.New("tls: failed to verify certificate"), false},
	}
	for _, tt := range tests {
		if got := retryableTransport(tt.err); got != tt.want {
			t.Errorf("retryableTransport(%v): got %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{`{"error":{"message":"Invalid model","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			"Invalid model (type invalid_request_error, code model_not_found)"},
		{`{"error":{"message":"m"}}`, "m"},
		{`{"error":"model \"x\" not found, try pulling it first"}`, `model "x" not found, try pulling it first`},
		{`{"object":"error","message":"too long","type":"BadRequestError","code":400}`, "too long (type BadRequestError, code 400)"},
		{`{"detail":"Not Found"}`, "Not Found"},
		{`{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`, `[{"loc":["body","messages"],"msg":"field required"}]`},
		{`{"id":"x"}`, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := errorText([]byte(tt.body)); got != tt.want {
			t.Errorf("errorText(%s): got %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, secret string
		max          int
		want         string
	}{
		{"Incorrect API key provided: sk-live-123.", "sk-live-123", 100, "Incorrect API key provided: [REDACTED]."},
		{"  line one\n\tline\x00two  ", "", 100, "line one line two"},
		{"héllo wörld", "", 5, "héllo…"},
		{"bad \xff byte", "", 100, "bad \uFFFD byte"},
	}
	for _, tt := range tests {
		if got := sanitize(tt.text, tt.secret, tt.max); got != tt.want {
			t.Errorf("sanitize(%q): got %q, want %q", tt.text, got, tt.want)
		}
	}
}
