package llm

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// retryAfter returns how long the response headers ask the client to wait:
// "retry-after-ms" (milliseconds, sent by some OpenAI-compatible services)
// first, then "Retry-After" as seconds or an HTTP date relative to now. A
// date in the past means zero. ok is false when neither header is usable.
func retryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e9 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// backoff returns the wait before retry number n (1 for the first retry):
// uniform in [0, min(maxWait, base·2^(n-1))], the "full jitter" of
// https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/.
func backoff(n int, base, maxWait time.Duration) time.Duration {
	ceil := maxWait
	if n >= 1 && n < 63 {
		if c := base << (n - 1); c > 0 && c>>(n-1) == base && c < maxWait {
			ceil = c
		}
	}
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// retryableTransport reports whether err, from sending a request or reading
// its response, means the endpoint could not take or finish the request and
// sending it again is safe: the connection was refused, reset or closed.
// Timeouts are not retried (see Config.Timeout), nor are TLS, DNS or URL
// errors that would only fail again, except temporary DNS failures.
func retryableTransport(err error) bool {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &dnsErr):
		return dnsErr.IsTemporary && !dnsErr.IsTimeout
	}
	return false
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
