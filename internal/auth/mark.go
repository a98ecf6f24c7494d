package auth

import (
	"context"
	"sync/atomic"
)

// markKey keys the *mark of one HTTP request in its context.
type markKey struct{}

// mark records whether the request it belongs to presented valid
// credentials.
type mark struct{ authenticated atomic.Bool }

// WithRequestMark returns ctx carrying a fresh mark that Authenticate and
// AuthenticateConsole set when the request they are given (with a context
// derived from ctx) presents valid credentials; [Authenticated] reads it.
// The HTTP server sets one per request: what a request does before it has
// authenticated — read a sign-in form, a client registration — is what
// its per-address budget bounds (internal/httpapi).
func WithRequestMark(ctx context.Context) context.Context {
	return context.WithValue(ctx, markKey{}, &mark{})
}

// Authenticated reports whether the request of ctx has presented valid
// credentials so far (false without a mark).
func Authenticated(ctx context.Context) bool {
	m, _ := ctx.Value(markKey{}).(*mark)
	return m != nil && m.authenticated.Load()
}

// markAuthenticated records on the mark of ctx, if any, that its request
// presented valid credentials.
func markAuthenticated(ctx context.Context) {
	if m, _ := ctx.Value(markKey{}).(*mark); m != nil {
		m.authenticated.Store(true)
	}
}
