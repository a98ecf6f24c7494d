package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/escape"
)

// Store is the sealed OAuth state of one registration (owner, serverKey):
// the registration's credential, which several sessions, processes and
// instances share. Every method returns the state as stored and the
// version of the credential it was read from or written as.
type Store interface {
	// Load reads the stored state.
	Load(ctx context.Context) (*Secret, int64, error)
	// Swap applies change to the stored state by a compare-and-swap:
	// change runs on the freshly read state (perhaps several times) and
	// reports whether it changed it.
	Swap(ctx context.Context, change func(*Secret) bool) (*Secret, int64, error)
	// Lease takes the credential's renewal lease for holder, for at most
	// ttl, and reads the state under it. CONFLICT means another holder has
	// it; on any error the lease is not held.
	Lease(ctx context.Context, holder string, ttl time.Duration) (*Secret, int64, error)
	// Release ends holder's lease.
	Release(ctx context.Context, holder string) error
}

// Options configure a [Handler]. Zero values mean the documented defaults.
type Options struct {
	// Store keeps the state. Required.
	Store Store
	// HTTP makes the requests to authorization servers (wrap its
	// transport with [Transport]). Required.
	HTTP *http.Client
	// Context ends when the owner of the handler closes; renewals that
	// start from a request's token source run in it. nil means
	// context.Background().
	Context context.Context
	// Timeout bounds such a renewal; the renewal lease lasts twice as
	// long. 0 means 30 s.
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Changed is called whenever a credential value the handler supplies
	// may have changed; nil means nobody is told.
	Changed func()
	// Logger receives warnings (never secrets); nil discards them. Server
	// and Owner name the registration in them.
	Logger        *slog.Logger
	Server, Owner string
}

// NewHandler returns the handler of a registration whose state is sec,
// read from version ver of its credential.
func NewHandler(sec *Secret, ver int64, o Options) *Handler {
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Changed == nil {
		o.Changed = func() {}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{o: o, sec: sec, ver: ver}
}

// Adopt takes sec, read from version ver of the stored credential, when it
// is newer than what h holds.
func (st *Handler) Adopt(sec *Secret, ver int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.adoptLocked(sec, ver)
}

// Login authorizes anew, whatever is stored, answering the server's
// challenge resp to req (its 401 or 403): the authorization code flow with
// the [Authorizer] in ctx, or the grant of a machine identity. It returns
// the status afterwards.
func (st *Handler) Login(ctx context.Context, req *http.Request, resp *http.Response) (*Status, error) {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("Www-Authenticate"))
	scopes := challengeScopes(challenges)
	if err := checkChallenge(scopes); err != nil {
		return nil, err
	}
	st.authMu.Lock()
	err := st.authorize(ctx, req, resp, challenges, scopes)
	if err == nil {
		st.failed = nil
	}
	st.authMu.Unlock()
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sec.Status(), nil
}

// Limits of authorizations made without being asked (Login always runs).
const (
	maxAuthorizations   = 3           // within authorizationWindow
	authorizationWindow = time.Minute // for each (owner, serverKey)
)

// Handler is the OAuth client of one (owner, serverKey): it is the
// auth.OAuthHandler of every session to that server, supplies the access
// token, renews it, obtains a new one when the server asks (within limits)
// and keeps it sealed in the registration's credential.
//
// The stored credential is the truth; sec is this process's copy. Every
// change is a compare-and-swap on the stored credential (Store.Swap), and a
// token is renewed only from the stored state, re-read under the
// credential's renewal lease, so that neither another session, another
// process nor another instance on the same database loses or undoes a grant:
// a newer token stored since (a renewal elsewhere, a `duet server login`
// while `duet serve` runs) is adopted, never overwritten by an older one, and
// a rotating refresh token is spent once.
type Handler struct {
	o Options

	authMu   sync.Mutex // one authorization at a time
	recent   []time.Time
	failedAt time.Time // the last authorization failed then, with failed
	failed   error

	mu  sync.Mutex // guards sec and ver; held while renewing
	sec *Secret
	ver int64 // the version of the stored credential sec was read from or written as

	dpop *DPoPKey // parsed from sec.DPoPKey
}

// dpopKeyLocked returns the DPoP key of the registration; nil when it has
// none.
func (st *Handler) dpopKeyLocked() *DPoPKey {
	if st.sec == nil || st.sec.DPoPKey == "" {
		return nil
	}
	if st.dpop == nil || st.dpop.stored != st.sec.DPoPKey {
		k, err := parseDPoPKey(st.sec.DPoPKey, st.o.Now)
		if err != nil {
			st.o.Logger.Warn("the stored DPoP key cannot be read; the next authorization makes another", "server", st.o.Server, "err", err)
			return nil
		}
		k.stored = st.sec.DPoPKey
		st.dpop = k
	}
	return st.dpop
}

// BoundKey returns the key the current token is bound to, or nil for a
// bearer token: MCP requests then carry DPoP proofs ([DPoPRequest]).
func (st *Handler) BoundKey() *DPoPKey {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sec == nil || st.sec.Token == nil || !strings.EqualFold(st.sec.Token.Type, dpopScheme) {
		return nil
	}
	return st.dpopKeyLocked()
}

var _ auth.OAuthHandler = (*Handler)(nil)

// adoptLocked takes sec, read from version ver of the stored credential,
// when it is newer than what st holds.
func (st *Handler) adoptLocked(sec *Secret, ver int64) {
	if sec != nil && ver > st.ver {
		st.sec, st.ver = sec, ver
		st.o.Changed()
	}
}

// reloadLocked reads the stored credential and adopts it when it is newer.
func (st *Handler) reloadLocked(ctx context.Context) error {
	sec, ver, err := st.o.Store.Load(ctx)
	if err != nil {
		return err
	}
	st.adoptLocked(sec, ver)
	return nil
}

// updateLocked applies change to the stored OAuth state by a
// compare-and-swap (change runs on the freshly read state and reports
// whether it changed it) and adopts the result. When the store cannot be
// written the change is kept in this process only (logged): a token just
// obtained must not be lost with it.
func (st *Handler) updateLocked(ctx context.Context, change func(*Secret) bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	sec, ver, err := st.o.Store.Swap(ctx, change)
	if err == nil && sec != nil {
		st.adoptLocked(sec, ver)
		return
	}
	if err == nil {
		err = duet.Errorf(duet.CodeInternal, "the OAuth configuration is missing from the credential")
	}
	st.o.Logger.WarnContext(ctx, "cannot store the OAuth state", "server", st.o.Server, "owner", st.o.Owner,
		"code", duet.ErrorCode(err), "err", duet.ErrorMessage(err))
	mem := *st.sec
	mem.Want = slices.Clone(mem.Want)
	if change(&mem) {
		st.sec = &mem
		st.o.Changed()
	}
}

type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// TokenSource supplies the access token of every request: the stored one,
// renewed when it is about to expire. No token means no Authorization
// header; the server's 401 then leads to Authorize.
func (st *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return tokenFunc(st.token), nil
}

func (st *Handler) token() (*oauth2.Token, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.sec.Token
	if t == nil {
		return nil, nil
	}
	if !t.expiring(st.o.Now()) {
		return t.oauth2(), nil
	}
	ctx, cancel := context.WithTimeout(st.o.Context, st.o.Timeout)
	defer cancel()
	nt, err := st.renewLocked(ctx, t)
	switch {
	case err != nil:
		return nil, err
	case nt == nil:
		return nil, nil
	}
	return nt.oauth2(), nil
}

// renewableLocked reports whether t can be renewed without a person: with its
// refresh token, or by the client credentials grant again.
func (st *Handler) renewableLocked(t *Token) bool {
	return t.Refresh != "" || st.sec.Grant == duet.AuthClientCredentials && t.TokenURL != ""
}

// renewLocked replaces used, a token about to expire or refused by the
// server, with a usable one. It never renews from this process's copy: it
// re-reads the stored credential and uses a newer token stored since
// (another session, process or login got one); otherwise it takes the
// credential's renewal lease (waiting while another process renews), reads
// the stored state again under it and renews that token — with its refresh
// token, or by the client credentials grant again — then stores the result
// by a compare-and-swap that keeps a newer grant stored meanwhile. It
// returns nil when there is no token to renew, or when the authorization
// server no longer honours the grant (the token is dropped, unless a newer
// one replaced it: authorize again).
func (st *Handler) renewLocked(ctx context.Context, used *Token) (*Token, error) {
	const op = "renewing the access token"
	fresh := func() *Token {
		if t := st.sec.Token; t != nil && t.Access != used.Access && !t.expiring(st.o.Now()) {
			return t
		}
		return nil
	}
	if err := st.reloadLocked(ctx); err != nil {
		return nil, st.flowErrorLocked(op, err, nil)
	}
	if t := fresh(); t != nil {
		return t, nil
	}
	if st.sec.Token == nil || !st.renewableLocked(st.sec.Token) {
		return nil, nil
	}
	t, release, err := st.leaseLocked(ctx, fresh)
	if err != nil || t != nil {
		return t, err
	}
	defer release()
	if t := fresh(); t != nil {
		return t, nil
	}
	cur := st.sec.Token
	if cur == nil || !st.renewableLocked(cur) {
		return nil, nil
	}
	sec := *st.sec
	rctx, refused := withRefusals(ctx)
	var nt *Token
	if cur.Refresh != "" {
		nt, err = st.refresh(rctx, &sec, cur)
	} else {
		var tok *oauth2.Token
		tok, err = st.tokenRequest(rctx, &sec, cur, cur.Scopes, nil)
		if err == nil {
			nt = cur.endpoint().fill(tok, cur.Scopes, st.o.Now())
		}
	}
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_client" || re.ErrorCode == "unauthorized_client") {
			st.o.Logger.WarnContext(ctx, "the authorization server no longer accepts the stored grant; authorization is needed again",
				"server", st.o.Server, "owner", st.o.Owner, "error", escape.Line(re.ErrorCode, 60))
			// Drop the refused token only: a newer grant stored meanwhile
			// (a login) stays.
			st.updateLocked(ctx, func(o *Secret) bool {
				if o.Token == nil || o.Token.Access != cur.Access {
					return false
				}
				o.Token = nil
				return true
			})
			return fresh(), nil
		}
		return nil, st.flowErrorLocked(op, err, refused)
	}
	st.updateLocked(ctx, func(o *Secret) bool {
		if o.Token != nil && o.Token.Access != cur.Access {
			return false // a newer grant was stored meanwhile: it wins
		}
		o.Token = nt
		return true
	})
	if t := st.sec.Token; t != nil && !t.expiring(st.o.Now()) {
		return t, nil
	}
	return nt, nil
}

// leaseLocked takes the renewal lease of the registration's credential and
// adopts the stored state it returns; release ends the lease. While another
// process holds the lease it waits, re-reading the stored state, and returns
// the token fresh finds there as soon as there is one (release is nil then).
func (st *Handler) leaseLocked(ctx context.Context, fresh func() *Token) (t *Token, release func(), err error) {
	const op = "renewing the access token"
	holder := duet.NewID("renew")
	wait := 20 * time.Millisecond
	for {
		sec, ver, err := st.o.Store.Lease(ctx, holder, 2*st.o.Timeout)
		if err == nil {
			release := func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := st.o.Store.Release(ctx, holder); err != nil {
					st.o.Logger.WarnContext(ctx, "cannot release the renewal lease (it expires by itself)", "server", st.o.Server,
						"owner", st.o.Owner, "code", duet.ErrorCode(err), "err", duet.ErrorMessage(err))
				}
			}
			st.adoptLocked(sec, ver)
			return nil, release, nil
		}
		if duet.ErrorCode(err) != duet.CodeConflict {
			return nil, nil, st.flowErrorLocked(op, err, nil)
		}
		// Another process is renewing this token: wait for its result.
		select {
		case <-ctx.Done():
			return nil, nil, &flowError{msg: op + ": another process was still renewing it", err: ctx.Err()}
		case <-time.After(wait):
		}
		wait = min(2*wait, 250*time.Millisecond)
		if err := st.reloadLocked(ctx); err != nil {
			return nil, nil, st.flowErrorLocked(op, err, nil)
		}
		if t := fresh(); t != nil {
			return t, nil, nil
		}
	}
}

// refresh uses t's refresh token.
func (st *Handler) refresh(ctx context.Context, sec *Secret, t *Token) (*Token, error) {
	params := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.Refresh}}
	if strings.EqualFold(t.Type, dpopScheme) {
		// A DPoP-bound token is renewed with a proof of the same key.
		ctx = withDPoP(ctx, st.dpopKeyLocked())
	}
	tok, err := st.tokenRequest(ctx, sec, t, nil, params)
	if err != nil {
		return nil, err
	}
	nt := t.endpoint().fill(tok, t.Scopes, st.o.Now())
	if nt.Refresh == "" {
		nt.Refresh = t.Refresh // not rotated
	}
	return nt, nil
}

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
