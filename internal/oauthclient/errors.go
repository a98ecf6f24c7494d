package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/oauth2"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/escape"
	"github.com/duet-test/duet/internal/redact"
)

// issuerMismatch says the server named an authorization server other than
// the one the registration's client is bound to. Nothing was sent to it.
type issuerMismatch struct {
	bound, found string
}

func (e *issuerMismatch) Error() string {
	return fmt.Sprintf("%s is not %s, which the client is bound to", e.named(), strconvQuote(e.bound))
}

// unboundSecret says the registration's client secret or key is bound to
// no issuer (it was stored before Duet required one): it is sent nowhere.
type unboundSecret struct{}

func (*unboundSecret) Error() string {
	return "the client secret or key is bound to no authorization server; it is sent to none"
}

// named names the authorization server found (outside text, sanitized).
func (e *issuerMismatch) named() string {
	if e.found == "" {
		return "another authorization server"
	}
	return "the authorization server " + strconvQuote(e.found)
}

// checkIssuer refuses issuer found when the client is bound to another.
func checkIssuer(bound, found string) error {
	if bound == "" || strings.TrimSuffix(bound, "/") == strings.TrimSuffix(found, "/") {
		return nil
	}
	return &issuerMismatch{bound: bound, found: found}
}

// loginRequired says a call needs the owner's authorization, which only
// `duet server login` (or a caller with an Authorizer) can obtain.
type loginRequired struct {
	scopes []string
}

func (e *loginRequired) Error() string {
	return "OAuth authorization needed (" + scopeList(e.scopes) + ")"
}

// flowError is a failed OAuth step. Its message names no secret: token
// endpoint answers are reduced to their status and error code, and the
// registration's secrets are redacted from anything else.
type flowError struct {
	msg     string
	err     error
	refused *duet.Error // the SSRF guard refused an authorization server address
}

func (e *flowError) Error() string { return e.msg }

func (e *flowError) Unwrap() error { return e.err }

func (st *Handler) flowError(op string, err error, refused *refusals) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.flowErrorLocked(op, err, refused)
}

// flowErrorLocked is flowError for a caller holding st.mu.
func (st *Handler) flowErrorLocked(op string, err error, refused *refusals) error {
	var fe *flowError
	if errors.As(err, &fe) {
		return err
	}
	msg := redact.Secrets(op+": "+describe(err), st.sec.Values()...)
	return &flowError{msg: msg, err: err, refused: refused.first()}
}

// describe says what went wrong in err in one line: a token endpoint's
// answer reduced to its status and error code, the rest without the HTML
// error page some go-sdk errors quote.
func describe(err error) string {
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		msg := "the token endpoint answered"
		if re.Response != nil {
			msg += " " + re.Response.Status
		}
		if re.ErrorCode != "" {
			msg += ": " + escape.Line(re.ErrorCode, 60)
			if re.ErrorDescription != "" {
				msg += ": " + escape.Line(re.ErrorDescription, 200)
			}
		}
		return msg
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	}
	msg := err.Error()
	lower := strings.ToLower(msg)
	for _, page := range []string{"<!doctype html", "<html"} {
		if i := strings.Index(lower, page); i >= 0 {
			msg = strings.TrimRight(msg[:i], " :") + " (an HTML error page)"
			break
		}
	}
	return escape.Line(msg, 300)
}

// refusals records the SSRF guard's refusals of authorization server
// addresses during one OAuth step: the go-sdk reduces some errors to text.
type refusals struct {
	mu  sync.Mutex
	err *duet.Error
}

func (r *refusals) first() *duet.Error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

type refusalsKey struct{}

func withRefusals(ctx context.Context) (context.Context, *refusals) {
	r := &refusals{}
	return context.WithValue(ctx, refusalsKey{}, r), r
}

// Failure maps a failed OAuth step of registration reg (in err's chain) to
// a code, or returns nil when err holds none: MCP_AUTH_FAILED (the owner
// must run `duet server login`, or the step failed),
// MCP_AUTH_ISSUER_MISMATCH, URL_REFUSED, CANCELLED, MCP_CALL_TIMEOUT.
func Failure(ctx context.Context, reg *duet.MCPServer, err error) error {
	var fe *flowError
	var im *issuerMismatch
	var ub *unboundSecret
	switch {
	case NeedsLogin(reg, err) != nil:
		return NeedsLogin(reg, err)
	case errors.As(err, &ub):
		return duet.WrapError(duet.CodeMCPAuthFailed, err,
			"the OAuth client secret (or key) of MCP server %s is bound to no authorization server (it was stored before Duet required one): Duet sent it nothing. "+
				"Register it again with the issuer of the authorization server the client belongs to: "+
				"`duet server add --as %s --name %s --url %s --auth %s ... --issuer URL --replace`",
			reg.Name, reg.Owner, reg.Name, reg.URL, reg.Auth)
	case errors.As(err, &im):
		return duet.WrapError(duet.CodeMCPAuthIssuerMismatch, err,
			"MCP server %s names %s, but its OAuth client is bound to %s: Duet sent it nothing. "+
				"If the server really moved to another authorization server, register it again with the new issuer: "+
				"`duet server add --as %s --name %s --url %s --auth %s ... --issuer URL --replace`",
			reg.Name, im.named(), strconvQuote(im.bound), reg.Owner, reg.Name, reg.URL, reg.Auth)
	case !errors.As(err, &fe):
		return nil
	}
	return stepFailure(ctx, reg, err, fe)
}

// stepFailure maps the failed OAuth step fe (err's) of reg to a code:
// CANCELLED or MCP_CALL_TIMEOUT when ctx ended, URL_REFUSED when the guard
// refused an authorization server's address, MCP_AUTH_FAILED otherwise.
func stepFailure(ctx context.Context, reg *duet.MCPServer, err error, fe *flowError) error {
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), context.Canceled) {
			return duet.WrapError(duet.CodeCancelled, err, "the authorization for MCP server %s was cancelled", reg.Name)
		}
		return duet.WrapError(duet.CodeMCPCallTimeout, err, "the authorization for MCP server %s did not complete in time", reg.Name)
	}
	refused := fe.refused
	var de *duet.Error
	if refused == nil && errors.As(fe.err, &de) && de.Code == duet.CodeURLRefused {
		refused = de
	}
	if refused != nil {
		return duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: its authorization server: %s", reg.Name, refused.Message)
	}
	who := reg.Owner
	if reg.Auth == duet.AuthClientCredentials {
		who = "its client"
	}
	return duet.WrapError(duet.CodeMCPAuthFailed, err, "OAuth with MCP server %s (as %s) failed: %s", reg.Name, who, fe.msg)
}

// NeedsLogin returns the MCP_AUTH_FAILED error saying that reg's owner must
// run `duet server login`, when err (in its chain) says a call needs the
// owner's authorization; nil otherwise.
func NeedsLogin(reg *duet.MCPServer, err error) error {
	var lr *loginRequired
	if !errors.As(err, &lr) {
		return nil
	}
	return duet.WrapError(duet.CodeMCPAuthFailed, err, "MCP server %s needs %s's authorization (OAuth, %s): run `duet server login --as %s %s`",
		reg.Name, reg.Owner, scopeList(lr.scopes), reg.Owner, reg.Name)
}
