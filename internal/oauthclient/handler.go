package oauthclient

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
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

// Values returns every secret value h holds now (Secret.Values): the
// MCP client scrubs them from what a server answers.
func (st *Handler) Values() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sec == nil {
		return nil
	}
	return st.sec.Values()
}

// Login authorizes anew, whatever is stored, answering the server's
// challenge resp to req (its 401 or 403): the authorization code flow,
// asking the person through a (nil: nobody can be asked, and the flow
// fails asking for `duet server login`), or the grant of a machine
// identity. It returns the status afterwards.
func (st *Handler) Login(ctx context.Context, a *Authorizer, req *http.Request, resp *http.Response) (*Status, error) {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("Www-Authenticate"))
	scopes := challengeScopes(challenges)
	if err := checkChallenge(scopes); err != nil {
		return nil, err
	}
	st.authMu.Lock()
	err := st.authorize(ctx, a, req, resp, challenges, scopes)
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
