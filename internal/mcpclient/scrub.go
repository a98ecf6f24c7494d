package mcpclient

import (
	"errors"
	"net/http"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/redact"
)

// What a server answers may quote the credentials the client sent it — a
// tool that echoes its Authorization header under an innocent key, in its
// text or its structuredContent, an error page, a JSON-RPC error. The
// client owns those credentials, so it scrubs them, by value, from all it
// returns: results, errors, diagnoses. A caller never reads credentials to
// scrub them (docs/governance.md).
//
// A session knows the values it was opened with (the registration's
// headers, the OAuth state sealed in its credential: client secret,
// private key, access and refresh tokens) and learns those its OAuth
// handler obtains later (a renewal). What one request carried beyond
// them — a renewed access token, a DPoP proof, a Cookie, an Mcp-Param-*
// header whose name says it holds a secret — is noted by the session's
// innermost transport (sentRecorder) in the observer of the operation.

// scrubber is the credential values one operation must not return.
type scrubber []*redact.Set

// text scrubs t.
func (sc scrubber) text(t string) string {
	for _, s := range sc {
		t = s.Scrub(t)
	}
	return t
}

// result scrubs the content and structuredContent of tr in place.
func (sc scrubber) result(tr *duet.ToolResult) {
	if tr == nil {
		return
	}
	for _, s := range sc {
		tr.Content = s.ScrubJSON(tr.Content)
		tr.StructuredContent = s.ScrubJSON(tr.StructuredContent)
	}
}

// err returns err with the values replaced by a mask, in its message and
// in the text of what it wraps; the chain stays inspectable (errors.Is,
// errors.As).
func (sc scrubber) err(err error) error {
	if err == nil || sc.empty() {
		return err
	}
	var de *duet.Error
	if errors.As(err, &de) && de == err {
		out := *de
		out.Message = sc.text(de.Message)
		if de.Err != nil {
			out.Err = &scrubbedError{msg: sc.text(de.Err.Error()), err: de.Err}
		}
		return &out
	}
	return &scrubbedError{msg: sc.text(err.Error()), err: err}
}

func (sc scrubber) empty() bool {
	for _, s := range sc {
		if s.Len() > 0 {
			return false
		}
	}
	return true
}

// sessionCreds returns the credential values of a session opened with sec.
func sessionCreds(sec *secret) *redact.Set {
	s := redact.NewSet()
	s.Add(credentialValues(sec)...)
	return s
}

// scrubber returns what an operation on s that observed obs must scrub:
// the session's values, with those its OAuth handler obtained since they
// were last taken, and the values the operation's requests carried.
func (c *Client) scrubber(s *session, obs *observer) scrubber {
	if s.oauth != nil {
		if g := c.credGen.Load(); s.credsAt.Swap(g) != g {
			s.creds.Add(s.oauth.Values()...)
		}
	}
	return scrubber{s.creds, &obs.sent}
}

// sentRecorder notes in the observer of a request's operation the secret
// header values it carries beyond the registration's own (which the
// session knows): an OAuth access token, a DPoP proof, a Cookie, an
// Mcp-Param-* header whose name says it holds a secret. It is the
// innermost transport: it sees the request as it leaves.
type sentRecorder struct {
	next   http.RoundTripper
	static map[string]bool // canonical names of the registration's headers
}

func (r sentRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if obs := observerFrom(req.Context()); obs != nil && !obs.settled.Load() {
		for k, vs := range req.Header {
			if r.static[k] || k != "Dpop" && !redact.IsSensitiveKey(k) {
				continue
			}
			obs.sent.Add(vs...)
		}
	}
	return r.next.RoundTrip(req)
}

// credentialValues returns every secret value a sealed credential holds:
// the values of its headers and, for OAuth, the client secret, the private
// key and the tokens.
func credentialValues(sec *secret) []string {
	if sec == nil {
		return nil
	}
	var out []string
	for _, v := range sec.Headers {
		out = append(out, v)
	}
	if o := sec.OAuth; o != nil {
		out = append(out, o.Values()...)
	}
	return out
}
