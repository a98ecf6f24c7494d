package oauthclient

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/escape"
)

// renewableLocked reports whether t can be renewed without a person: with its
// refresh token, or by the client credentials grant again (not a nil t).
func (st *Handler) renewableLocked(t *Token) bool {
	return t != nil && (t.Refresh != "" || st.sec.Grant == duet.AuthClientCredentials && t.TokenURL != "")
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
	fresh := func() *Token { return st.freshLocked(used) }
	if err := st.reloadLocked(ctx); err != nil {
		return nil, st.flowErrorLocked(opRenew, err, nil)
	}
	if t := fresh(); t != nil || !st.renewableLocked(st.sec.Token) {
		return t, nil
	}
	t, release, err := st.leaseLocked(ctx, fresh)
	if err != nil || t != nil {
		return t, err
	}
	defer release()
	if t := fresh(); t != nil || !st.renewableLocked(st.sec.Token) {
		return t, nil
	}
	return st.renewStoredLocked(ctx, used)
}

// opRenew names a renewal in errors.
const opRenew = "renewing the access token"

// freshLocked returns the stored token when it is not used and is not
// about to expire: another session, process or login renewed it.
func (st *Handler) freshLocked(used *Token) *Token {
	if t := st.sec.Token; t != nil && t.Access != used.Access && !t.expiring(st.o.Now()) {
		return t
	}
	return nil
}

// renewStoredLocked renews the stored token, under the renewal lease, and
// stores the result unless a newer grant was stored meanwhile.
func (st *Handler) renewStoredLocked(ctx context.Context, used *Token) (*Token, error) {
	cur := st.sec.Token
	sec := *st.sec
	rctx, refused := withRefusals(ctx)
	nt, err := st.renewToken(rctx, &sec, cur)
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && grantRefused(re.ErrorCode) {
		st.dropRefusedLocked(ctx, cur, re.ErrorCode)
		return st.freshLocked(used), nil
	}
	if err != nil {
		return nil, st.flowErrorLocked(opRenew, err, refused)
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

// renewToken asks for a new token in place of t: with its refresh token,
// or by the client credentials grant again.
func (st *Handler) renewToken(ctx context.Context, sec *Secret, t *Token) (*Token, error) {
	if t.Refresh != "" {
		return st.refresh(ctx, sec, t)
	}
	tok, err := st.tokenRequest(ctx, sec, t, t.Scopes, nil)
	if err != nil {
		return nil, err
	}
	return t.endpoint().fill(tok, t.Scopes, st.o.Now()), nil
}

// grantRefused reports whether a token endpoint's error code says the
// stored grant is no longer honoured: authorization is needed again.
func grantRefused(code string) bool {
	return code == "invalid_grant" || code == "invalid_client" || code == "unauthorized_client"
}

// dropRefusedLocked drops the refused token cur only: a newer grant stored
// meanwhile (a login) stays.
func (st *Handler) dropRefusedLocked(ctx context.Context, cur *Token, code string) {
	st.o.Logger.WarnContext(ctx, "the authorization server no longer accepts the stored grant; authorization is needed again",
		"server", st.o.Server, "owner", st.o.Owner, "error", escape.Line(code, 60))
	st.updateLocked(ctx, func(o *Secret) bool {
		if o.Token == nil || o.Token.Access != cur.Access {
			return false
		}
		o.Token = nil
		return true
	})
}

// leaseLocked takes the renewal lease of the registration's credential and
// adopts the stored state it returns; release ends the lease. While another
// process holds the lease it waits, re-reading the stored state, and returns
// the token fresh finds there as soon as there is one (release is nil then).
func (st *Handler) leaseLocked(ctx context.Context, fresh func() *Token) (t *Token, release func(), err error) {
	const op = opRenew
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
