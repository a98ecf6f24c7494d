package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/duet-test/duet"
)

// Authorize is called by the transport when the server answered 401 or 403.
// In order: a challenge naming absurd scopes is refused; a token newer than
// the one the request carried (another session or process got it) is simply
// used; a 401 with a refresh token renews; otherwise Duet authorizes again:
// the client credentials grant, or the authorization code flow when the
// context carries an [Authorizer] — within limits. Without an Authorizer it
// fails asking for `duet server login`, remembering the scopes the server
// asked for.
func (st *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("Www-Authenticate"))
	scopes := challengeScopes(challenges)
	if resp.StatusCode == http.StatusForbidden && challengeParam(challenges, "error") != "insufficient_scope" {
		return &flowError{msg: "the server refused the access token (403 Forbidden without an insufficient_scope challenge); authorizing again would not help"}
	}
	if err := checkChallenge(scopes); err != nil {
		return err
	}
	st.authMu.Lock()
	defer st.authMu.Unlock()
	sent := bearerOf(req)
	st.mu.Lock()
	if err := st.reloadLocked(ctx); err != nil {
		st.mu.Unlock()
		return st.flowError("reading the stored token", err, nil)
	}
	cur := st.sec.Token
	st.mu.Unlock()
	if cur != nil && cur.Access != sent && !cur.expiring(st.o.Now()) && (resp.StatusCode == http.StatusUnauthorized || covers(cur.Scopes, scopes)) {
		return nil
	}
	if resp.StatusCode == http.StatusUnauthorized && cur != nil && cur.Access == sent && cur.Refresh != "" {
		// The token may have been revoked before its expiry.
		st.mu.Lock()
		nt, err := st.renewLocked(ctx, cur)
		st.mu.Unlock()
		if err == nil && nt != nil {
			return nil
		}
	}
	if resp.StatusCode == http.StatusForbidden && cur != nil && cur.Access == sent && covers(cur.Scopes, scopes) {
		return &flowError{msg: fmt.Sprintf("the server still answers insufficient_scope for %s, which the token was granted; authorizing again would not help", scopeList(scopes))}
	}
	now := st.o.Now()
	if st.failed != nil && now.Sub(st.failedAt) < retryFailedAfter {
		// The go-sdk tries the older handshake after a failed one: do not
		// ask the person again at once.
		return st.failed
	}
	st.recent = slices.DeleteFunc(st.recent, func(t time.Time) bool { return now.Sub(t) > authorizationWindow })
	if len(st.recent) >= maxAuthorizations {
		return &flowError{msg: fmt.Sprintf("gave up after %d authorizations within %s", len(st.recent), authorizationWindow)}
	}
	err := st.authorize(ctx, req, resp, challenges, scopes)
	var fe *flowError
	if errors.As(err, &fe) && ctx.Err() == nil {
		st.failed, st.failedAt = err, now
	} else {
		st.failed = nil
	}
	return err
}

// retryFailedAfter is how long a failed authorization is not tried again
// (Login always tries).
const retryFailedAfter = 10 * time.Second

// authorize obtains a new token. The caller holds authMu.
func (st *Handler) authorize(ctx context.Context, req *http.Request, resp *http.Response, challenges []oauthex.Challenge, scopes []string) error {
	st.mu.Lock()
	grant, granted, want := st.sec.Grant, st.grantedLocked(), st.sec.Want
	unbound := st.sec.checkBound()
	st.mu.Unlock()
	if unbound != nil {
		return unbound
	}
	a := AuthorizerFrom(ctx)
	if grant == duet.AuthOAuth && a == nil {
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
	st.recent = append(st.recent, st.o.Now())
	ctx, refused := withRefusals(ctx)
	if requiresDPoP(challenges) {
		// The server wants sender-constrained tokens: bind the new one
		// to the registration's key (made now if it has none).
		st.mu.Lock()
		if st.sec.DPoPKey == "" {
			_, stored, err := newDPoPKey(st.o.Now)
			if err != nil {
				st.mu.Unlock()
				return st.flowError("making a DPoP key", err, nil)
			}
			st.updateLocked(ctx, func(o *Secret) bool {
				if o.DPoPKey != "" {
					return false
				}
				o.DPoPKey = stored
				return true
			})
		}
		k := st.dpopKeyLocked()
		st.mu.Unlock()
		ctx = withDPoP(ctx, k)
	}
	var t *Token
	var err error
	if grant == duet.AuthClientCredentials {
		t, err = st.clientCredentials(ctx, req.URL.String(), challenges, union(granted, scopes))
	} else if grant == duet.AuthEnterprise {
		t, err = st.enterprise(ctx, req.URL.String(), challenges, union(granted, scopes))
	} else {
		t, err = st.authorizationCode(ctx, a, req, resp, challenges, union(granted, want))
	}
	if err != nil {
		return st.flowError("authorizing", err, refused)
	}
	// A new grant replaces whatever is stored: it is the newest.
	st.mu.Lock()
	st.updateLocked(ctx, func(o *Secret) bool {
		o.Token = t
		o.Want = slices.DeleteFunc(slices.Clone(o.Want), func(s string) bool { return slices.Contains(t.Scopes, s) })
		if o.Issuer == "" && o.ClientID != "" && t.Issuer != "" {
			o.Issuer = strings.TrimSuffix(t.Issuer, "/") // pinned: the pre-registered client's credentials go to no other
		}
		return true
	})
	st.mu.Unlock()
	return nil
}

func (st *Handler) grantedLocked() []string {
	if st.sec.Token == nil {
		return nil
	}
	return st.sec.Token.Scopes
}
