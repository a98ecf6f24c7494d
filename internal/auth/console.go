package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/duet-test/duet"
)

// The web console's credentials.
const (
	// SessionCookie is the console's session cookie: a random secret
	// (HttpOnly, SameSite=Lax, Secure over TLS); the store keeps its hash.
	SessionCookie = "duet_session"
	// HeaderCSRF carries the session's CSRF token on a state-changing
	// request sent by script; forms send it as the field FormCSRF.
	HeaderCSRF = "X-Csrf-Token"
	// FormCSRF is the form field that carries the CSRF token.
	FormCSRF = "csrf"
	// HeaderProxySecret is the header an SSO proxy proves itself with.
	HeaderProxySecret = "X-Duet-Proxy-Secret"
)

// Methods of the console.
const (
	MethodSession Method = "session" // a console session cookie
	MethodSSO     Method = "sso"     // an SSO proxy's user header with its shared secret
)

// ConsoleOptions configure the console's sign-in.
type ConsoleOptions struct {
	// Sessions keeps console sessions; nil disables the console's
	// sign-in (every console request is then UNAUTHENTICATED).
	Sessions duet.SessionStore
	// SessionTTL is how long a sign-in lasts; 0 means 12h.
	SessionTTL time.Duration
	// SSOUserHeader and SSOSecret, both set, let an SSO proxy sign people
	// in: a request carrying SSOSecret in X-Duet-Proxy-Secret is from the
	// user its SSOUserHeader names.
	SSOUserHeader string
	SSOSecret     string
}

// EnableConsole lets the console's credentials (session cookies, the SSO
// proxy) identify requests in AuthenticateConsole.
func (a *Authenticator) EnableConsole(o ConsoleOptions) {
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	a.console = o
	if o.SSOSecret != "" {
		a.ssoKey = sha256.Sum256([]byte(o.SSOSecret))
	}
}

// SSOConfigured reports whether an SSO proxy may sign people in.
func (a *Authenticator) SSOConfigured() bool {
	return a.console.SSOUserHeader != "" && a.console.SSOSecret != ""
}

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("auth: crypto/rand failed: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashSession is the stored form of a session cookie's secret.
func hashSession(secret string) string { return HashToken("session:" + secret) }

// StartSession signs user in with method and returns the cookie value (the
// session's secret, never stored) and the session. Returns
// UNAUTHENTICATED when the console is not enabled, INVALID_ARGUMENT.
func (a *Authenticator) StartSession(ctx context.Context, user string, method Method) (string, *duet.Session, error) {
	return a.startSession(ctx, user, method, nil)
}

// startSession starts a session; one started with a personal access token
// t ends when t is revoked (the store deletes it with the token) and no
// later than t expires.
func (a *Authenticator) startSession(ctx context.Context, user string, method Method, t *duet.Token) (string, *duet.Session, error) {
	if a.console.Sessions == nil {
		return "", nil, duet.Errorf(duet.CodeUnauthenticated, "the web console is not enabled")
	}
	if err := duet.ValidUserID(user); err != nil {
		return "", nil, duet.Errorf(duet.CodeUnauthenticated, "invalid user id: %s", duet.ErrorMessage(err))
	}
	secret := randomString(32)
	s := &duet.Session{Hash: hashSession(secret), UserID: user, CSRF: randomString(24), Method: string(method),
		ExpiresAt: time.Now().Add(a.console.SessionTTL)}
	if t != nil {
		s.TokenID = t.ID
		if t.ExpiresAt != nil && t.ExpiresAt.Before(s.ExpiresAt) {
			s.ExpiresAt = *t.ExpiresAt
		}
	}
	if err := a.console.Sessions.CreateSession(ctx, s); err != nil {
		return "", nil, err
	}
	return secret, s, nil
}

// SignIn exchanges a personal access token for a console session. Returns
// UNAUTHENTICATED for a token that is not valid.
func (a *Authenticator) SignIn(ctx context.Context, token string) (string, *duet.Session, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return "", nil, duet.Errorf(duet.CodeUnauthenticated, "enter a personal access token")
	}
	t, err := a.tokens.FindTokenByHash(ctx, HashToken(token))
	if err != nil {
		if duet.ErrorCode(err) == duet.CodeUnauthenticated {
			return "", nil, duet.Errorf(duet.CodeUnauthenticated, "invalid or expired token")
		}
		return "", nil, err
	}
	return a.startSession(ctx, t.UserID, MethodToken, t)
}

// SignOut ends the session of the request's cookie, if any.
func (a *Authenticator) SignOut(ctx context.Context, r *http.Request) error {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || a.console.Sessions == nil {
		return nil
	}
	return a.console.Sessions.DeleteSession(ctx, hashSession(c.Value))
}

// SetSessionCookie writes the session cookie: HttpOnly, SameSite=Lax,
// Secure when the request came over TLS (directly or, as
// X-Forwarded-Proto says, through a proxy that ends TLS). An empty value
// deletes it.
func SetSessionCookie(w http.ResponseWriter, r *http.Request, value string, expires time.Time) {
	c := &http.Cookie{Name: SessionCookie, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: OverTLS(r)}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	http.SetCookie(w, c)
}

// OverTLS reports whether r reached the browser's end over TLS.
func OverTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https")
}

// AuthenticateConsole identifies a browser of the web console: by the SSO
// proxy's headers (when configured and the request carries the proxy
// secret) or by the session cookie. The identity is Ambient — the browser
// sends these credentials by itself — so state-changing requests must also
// carry the session's CSRF token (CheckCSRF). For an SSO request without a
// session of that user, start says whether to start one (the console's
// pages, which carry its CSRF token: NewCookie is then the value to set)
// or not (the REST API: such a request may only read). Returns
// UNAUTHENTICATED. Valid credentials set the request's mark
// (WithRequestMark).
func (a *Authenticator) AuthenticateConsole(ctx context.Context, r *http.Request, start bool) (Identity, error) {
	id, err := a.authenticateConsole(ctx, r, start)
	if err == nil {
		markAuthenticated(r.Context())
	}
	return id, err
}

func (a *Authenticator) authenticateConsole(ctx context.Context, r *http.Request, start bool) (Identity, error) {
	var sess *duet.Session
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" && a.console.Sessions != nil {
		s, err := a.console.Sessions.FindSession(ctx, hashSession(c.Value))
		switch {
		case err == nil:
			sess = s
		case duet.ErrorCode(err) != duet.CodeUnauthenticated:
			return Identity{}, err
		}
	}
	if a.SSOConfigured() {
		if presented := r.Header.Get(HeaderProxySecret); presented != "" {
			p := sha256.Sum256([]byte(presented))
			if subtle.ConstantTimeCompare(p[:], a.ssoKey[:]) != 1 {
				return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "invalid SSO proxy secret")
			}
			if n := len(r.Header.Values(a.console.SSOUserHeader)); n != 1 {
				return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "the SSO proxy must send exactly one %s header (got %d)", a.console.SSOUserHeader, n)
			}
			user := strings.TrimSpace(r.Header.Get(a.console.SSOUserHeader))
			if err := duet.ValidUserID(user); err != nil {
				return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "invalid %s header: %s", a.console.SSOUserHeader, duet.ErrorMessage(err))
			}
			id := Identity{UserID: user, Method: MethodSSO, Ambient: true}
			if sess != nil && sess.UserID == user {
				id.Session = sess
				return id, nil
			}
			if !start {
				return id, nil
			}
			cookie, s, err := a.StartSession(ctx, user, MethodSSO)
			if err != nil {
				return Identity{}, err
			}
			id.Session, id.NewCookie = s, cookie
			return id, nil
		}
	}
	if sess == nil {
		return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "sign in to the console")
	}
	if err := duet.ValidUserID(sess.UserID); err != nil {
		return Identity{}, duet.Errorf(duet.CodeUnauthenticated, "the session's user id is invalid")
	}
	return Identity{UserID: sess.UserID, Method: MethodSession, Ambient: true, Session: sess, TokenID: sess.TokenID}, nil
}

// SafeMethod reports whether an HTTP method changes nothing (GET, HEAD,
// OPTIONS): only those are served without a CSRF token.
func SafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// CheckCSRF refuses a state-changing request of an ambient identity (a
// session cookie, an SSO proxy) whose presented token is not the
// session's. Token and gateway identities are not sent by a browser on its
// own and need none. Returns PERMISSION_DENIED.
func CheckCSRF(id Identity, method, presented string) error {
	if !id.Ambient || SafeMethod(method) {
		return nil
	}
	if id.Session == nil || presented == "" || subtle.ConstantTimeCompare([]byte(presented), []byte(id.Session.CSRF)) != 1 {
		return duet.Errorf(duet.CodePermissionDenied, "missing or invalid CSRF token: reload the page and try again")
	}
	return nil
}
