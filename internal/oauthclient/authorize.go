package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
)

// Authorize is called by the transport when the server answered 401 or 403.
// In order: a challenge naming absurd scopes is refused; a token newer than
// the one the request carried (another session or process got it) is simply
// used; a 401 with a refresh token renews; otherwise Duet authorizes again,
// within limits: the client credentials grant, or the enterprise grant. h
// asks nobody: where the authorization code flow is needed it fails asking
// for `duet server login`, remembering the scopes the server asked for (the
// handler of [Handler.Authorizing] asks the person instead).
func (st *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	return st.answer(ctx, nil, req, resp)
}

// Authorizing returns h as the auth.OAuthHandler of a session opened for
// one operation that may ask a person, through a, to authorize Duet or to
// grant more scopes: where h's Authorize fails asking for `duet server
// login`, its Authorize runs the authorization code flow with a. It holds
// a for the session's life: give it only to a session that ends with the
// operation. A nil a returns h.
func (st *Handler) Authorizing(a *Authorizer) auth.OAuthHandler {
	if a == nil {
		return st
	}
	return authorizing{st, a}
}

// authorizing is a Handler whose authorizations may ask a person through a.
type authorizing struct {
	h *Handler
	a *Authorizer
}

var _ auth.OAuthHandler = authorizing{}

func (x authorizing) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return x.h.TokenSource(ctx)
}

func (x authorizing) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	return x.h.answer(ctx, x.a, req, resp)
}

// answer is Authorize, asking the person through a (nil: nobody).
func (st *Handler) answer(ctx context.Context, a *Authorizer, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("Www-Authenticate"))
	scopes := challengeScopes(challenges)
	if err := checkRefusal(resp.StatusCode, challenges, scopes); err != nil {
		return err
	}
	st.authMu.Lock()
	defer st.authMu.Unlock()
	if done, err := st.useStored(ctx, bearerOf(req), resp.StatusCode, scopes); done {
		return err
	}
	now := st.o.Now()
	if err := st.withinLimits(now); err != nil {
		return err
	}
	err := st.authorize(ctx, a, req, resp, challenges, scopes)
	var fe *flowError
	if errors.As(err, &fe) && ctx.Err() == nil {
		st.failed, st.failedAt = err, now
	} else {
		st.failed = nil
	}
	return err
}

// checkRefusal refuses to answer a server's refusal (status, with its
// challenges naming scopes) by authorizing when that cannot help: a 403
// that is not insufficient_scope, or a challenge naming absurd scopes.
func checkRefusal(status int, challenges []oauthex.Challenge, scopes []string) error {
	if status == http.StatusForbidden && challengeParam(challenges, "error") != "insufficient_scope" {
		return &flowError{msg: "the server refused the access token (403 Forbidden without an insufficient_scope challenge); authorizing again would not help"}
	}
	return checkChallenge(scopes)
}

// useStored answers a server's refusal (status, naming scopes) of the
// token sent with what is stored, when it can: a newer token is used, a
// revoked one renewed; a token that has the scopes and is still refused is
// an error. It reports whether it answered (with err); the caller holds
// authMu.
func (st *Handler) useStored(ctx context.Context, sent string, status int, scopes []string) (done bool, err error) {
	st.mu.Lock()
	if err := st.reloadLocked(ctx); err != nil {
		st.mu.Unlock()
		return true, st.flowError("reading the stored token", err, nil)
	}
	cur := st.sec.Token
	st.mu.Unlock()
	switch {
	case cur == nil:
		return false, nil
	case cur.Access != sent:
		return !cur.expiring(st.o.Now()) && (status == http.StatusUnauthorized || covers(cur.Scopes, scopes)), nil
	case status == http.StatusUnauthorized && cur.Refresh != "":
		// The token may have been revoked before its expiry.
		st.mu.Lock()
		nt, err := st.renewLocked(ctx, cur)
		st.mu.Unlock()
		return err == nil && nt != nil, nil
	case status == http.StatusForbidden && covers(cur.Scopes, scopes):
		return true, &flowError{msg: fmt.Sprintf("the server still answers insufficient_scope for %s, which the token was granted; authorizing again would not help", scopeList(scopes))}
	}
	return false, nil
}

// withinLimits refuses an authorization at now too soon after a failed
// one (the go-sdk tries the older handshake after a failed one: the person
// is not asked again at once), or beyond maxAuthorizations within
// authorizationWindow. The caller holds authMu.
func (st *Handler) withinLimits(now time.Time) error {
	if st.failed != nil && now.Sub(st.failedAt) < retryFailedAfter {
		return st.failed
	}
	st.recent = slices.DeleteFunc(st.recent, func(t time.Time) bool { return now.Sub(t) > authorizationWindow })
	if len(st.recent) >= maxAuthorizations {
		return &flowError{msg: fmt.Sprintf("gave up after %d authorizations within %s", len(st.recent), authorizationWindow)}
	}
	return nil
}

// retryFailedAfter is how long a failed authorization is not tried again
// (Login always tries).
const retryFailedAfter = 10 * time.Second

// authorize obtains a new token, asking the person through a (nil: nobody)
// for the authorization code flow. The caller holds authMu.
func (st *Handler) authorize(ctx context.Context, a *Authorizer, req *http.Request, resp *http.Response, challenges []oauthex.Challenge, scopes []string) error {
	st.mu.Lock()
	grant, granted, want := st.sec.Grant, st.grantedLocked(), st.sec.Want
	unbound := st.sec.checkBound()
	st.mu.Unlock()
	if unbound != nil {
		return unbound
	}
	if grant == duet.AuthOAuth && a == nil {
		return st.loginRequired(ctx, want, scopes)
	}
	st.recent = append(st.recent, st.o.Now())
	ctx, refused := withRefusals(ctx)
	if requiresDPoP(challenges) {
		var err error
		if ctx, err = st.withDPoPKey(ctx); err != nil {
			return err
		}
	}
	var t *Token
	var err error
	switch grant {
	case duet.AuthClientCredentials:
		t, err = st.clientCredentials(ctx, req.URL.String(), challenges, union(granted, scopes))
	case duet.AuthEnterprise:
		t, err = st.enterprise(ctx, req.URL.String(), challenges, union(granted, scopes))
	default:
		t, err = st.authorizationCode(ctx, a, req, resp, challenges, union(granted, want))
	}
	if err != nil {
		return st.flowError("authorizing", err, refused)
	}
	st.store(ctx, t)
	return nil
}

// loginRequired remembers the scopes a server asked for (beside want, those
// remembered already) for the next login, and returns the error asking for
// it.
func (st *Handler) loginRequired(ctx context.Context, want, scopes []string) error {
	wanted := union(want, scopes)
	if err := checkScopeSet(wanted); err != nil {
		return &flowError{msg: "the server asks for more scopes than Duet keeps for the next login (" + err.Error() + ")"}
	}
	if len(wanted) != len(want) {
		st.mu.Lock()
		st.updateLocked(ctx, func(o *Secret) bool {
			u := union(o.Want, scopes)
			if len(u) == len(o.Want) || checkScopeSet(u) != nil {
				return false
			}
			o.Want = u
			return true
		})
		wanted = union(st.sec.Want, scopes)
		st.mu.Unlock()
	}
	return &loginRequired{scopes: wanted}
}

// withDPoPKey returns ctx making token requests prove possession of the
// registration's DPoP key (made now if it has none): the server wants
// sender-constrained tokens, and the new one is bound to the key.
func (st *Handler) withDPoPKey(ctx context.Context) (context.Context, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sec.DPoPKey == "" {
		_, stored, err := newDPoPKey(st.o.Now)
		if err != nil {
			return ctx, st.flowErrorLocked("making a DPoP key", err, nil)
		}
		st.updateLocked(ctx, func(o *Secret) bool {
			if o.DPoPKey != "" {
				return false
			}
			o.DPoPKey = stored
			return true
		})
	}
	return withDPoP(ctx, st.dpopKeyLocked()), nil
}

// store stores a new grant t: it replaces whatever is stored, being the
// newest, and satisfies the scopes wanted that it grants.
func (st *Handler) store(ctx context.Context, t *Token) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.updateLocked(ctx, func(o *Secret) bool {
		o.Token = t
		o.Want = slices.DeleteFunc(slices.Clone(o.Want), func(s string) bool { return slices.Contains(t.Scopes, s) })
		if o.Issuer == "" && o.ClientID != "" && t.Issuer != "" {
			o.Issuer = strings.TrimSuffix(t.Issuer, "/") // pinned: the pre-registered client's credentials go to no other
		}
		return true
	})
}

func (st *Handler) grantedLocked() []string {
	if st.sec.Token == nil {
		return nil
	}
	return st.sec.Token.Scopes
}
