package mcpclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/escape"
	"github.com/duet-test/duet/internal/oauthclient"
	"github.com/duet-test/duet/internal/redact"
)

// errCallTimeout is the cause of a call's context when its timeout fires.
var errCallTimeout = errors.New("MCP call timeout")

// classify maps the common failures of a connect or a call to codes: the
// call's time ran out, the SSRF guard refused, the server refused the
// credentials, or it could not be reached. It returns nil when err is none
// of these.
func (c *Client) classify(ctx context.Context, reg *duet.MCPServer, err error, obs *observer) error {
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), context.Canceled) {
			return duet.WrapError(duet.CodeCancelled, err, "the call to MCP server %s was cancelled", reg.Name)
		}
		return duet.WrapError(duet.CodeMCPCallTimeout, err, "MCP server %s did not answer within %s", reg.Name, c.timeoutOf(ctx))
	}
	var de *duet.Error
	if errors.As(err, &de) && de.Code == duet.CodeURLRefused {
		return duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: %s", reg.Name, de.Message)
	}
	if r, ok := obs.find(func(r response) bool { return r.err != nil }); ok {
		if errors.As(r.err, &de) && de.Code == duet.CodeURLRefused {
			return duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: %s", reg.Name, de.Message)
		}
	}
	if e := c.oauthFailure(ctx, reg, err); e != nil {
		return e
	}
	if r, ok := obs.authFailure(); ok {
		return authError(reg, r.status, r.wwwAuth, err)
	}
	if !obs.delivered() {
		if r, ok := obs.find(func(r response) bool { return r.err != nil }); ok {
			return duet.WrapError(duet.CodeMCPUnreachable, err, "cannot reach MCP server %s at %s: %s", reg.Name, reg.URL, netReason(r.err))
		}
	}
	return nil
}

// timeoutOf names the limit that ended ctx: the call timeout, or the
// caller's own deadline (a step's timeout, say).
func (c *Client) timeoutOf(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errCallTimeout) {
		return c.opts.CallTimeout.String() + " (" + envCallTimeout + ")"
	}
	return "the time its caller allowed"
}

// envCallTimeout is the setting of the call timeout, for messages.
const envCallTimeout = "DUET_MCP_CALL_TIMEOUT"

func authError(reg *duet.MCPServer, status int, wwwAuth string, err error) error {
	if e := oauthclient.NeedsLogin(reg, err); e != nil {
		return e
	}
	msg := fmt.Sprintf("MCP server %s answered %d %s", reg.Name, status, http.StatusText(status))
	scheme, params, _ := strings.Cut(strings.TrimSpace(wwwAuth), " ")
	if scheme != "" && len(scheme) < 32 {
		msg += " (it asks for " + sanitize(scheme, 32) + " authentication)"
	}
	switch {
	case reg.Auth == duet.AuthOAuth:
		msg += fmt.Sprintf(" to %s's OAuth token; authorize again with `duet server login --as %s %s`", reg.Owner, reg.Owner, reg.Name)
	case reg.Auth == duet.AuthClientCredentials:
		msg += " to the token of the registered OAuth client; check the client's permissions at the authorization server"
	case len(reg.HeaderNames) == 0:
		if strings.EqualFold(scheme, "bearer") && strings.Contains(params, "resource_metadata") {
			msg += fmt.Sprintf("; it is protected by OAuth: run `duet server add --as %s --name %s --url %s --auth oauth --replace`, then `duet server login --as %s %s`",
				reg.Owner, reg.Name, reg.URL, reg.Owner, reg.Name)
		} else {
			msg += fmt.Sprintf("; %s registered it without credentials: run `duet server add --as %s --name %s --url %s --bearer-token-env VAR --replace` (or --auth oauth)",
				reg.Owner, reg.Owner, reg.Name, reg.URL)
		}
	default:
		msg += fmt.Sprintf("; the credentials %s registered (%s) were refused: register new ones with `duet server add ... --replace`",
			reg.Owner, strings.Join(reg.HeaderNames, ", "))
	}
	return duet.WrapError(duet.CodeMCPAuthFailed, err, "%s", msg)
}

// netReason describes a transport error in a few words, without addresses
// that the message already names.
func netReason(err error) string {
	var dns *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "host " + sanitize(dns.Name, 100) + " not found"
		}
		return "DNS lookup of " + sanitize(dns.Name, 100) + " failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr):
		return "its TLS certificate is not trusted"
	case errors.As(err, &recordErr):
		return "it does not speak TLS (use http://?)"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "connection timed out"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the connection was closed without an answer"
	}
	return "network error"
}

// diagnose classifies a failed connect; when the common causes do not apply,
// it probes the endpoint with a raw MCP initialize request (and, if needed,
// the MCP-Lite tools/list route) to say precisely what answers there. What
// the endpoint said is quoted only after every credential value the
// connect held or sent (creds, obs) is scrubbed from it: an endpoint may
// echo the header it was sent (in a page title, a redirect path, an error
// text).
func (c *Client) diagnose(ctx context.Context, reg *duet.MCPServer, hc *http.Client, err error, obs *observer, creds *redact.Set) error {
	sc := scrubber{creds, &obs.sent}
	if e := c.classify(ctx, reg, err, obs); e != nil {
		return sc.err(e)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return sc.err(c.probe(pctx, reg, hc, err))
}

// scrubbedError is an error whose text had secrets removed; it unwraps to
// the original for errors.Is and errors.As.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// probeBody is an initialize request any MCP server since 2025-06-18
// answers.
const probeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"duet-probe","version":"1"}}}`

type probeAnswer struct {
	status   int
	ctype    string
	location string
	wwwAuth  string
	body     []byte
}

func rawPost(ctx context.Context, hc *http.Client, target, body string) (*probeAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return &probeAnswer{status: resp.StatusCode, ctype: ct, location: resp.Header.Get("Location"),
		wwwAuth: resp.Header.Get("Www-Authenticate"), body: data}, nil
}

func mismatch(err error, reg *duet.MCPServer, format string, args ...any) error {
	return duet.WrapError(duet.CodeMCPProtocolMismatch, err, "%s is not an MCP server: %s", reg.URL, fmt.Sprintf(format, args...))
}

func (c *Client) probe(ctx context.Context, reg *duet.MCPServer, hc *http.Client, sdkErr error) error {
	a, err := rawPost(ctx, hc, reg.URL, probeBody)
	if err != nil {
		if ctx.Err() != nil {
			return duet.WrapError(duet.CodeMCPCallTimeout, sdkErr, "MCP server %s did not answer in time", reg.Name)
		}
		var de *duet.Error
		if errors.As(err, &de) && de.Code == duet.CodeURLRefused {
			return duet.WrapError(duet.CodeURLRefused, err, "MCP server %s: %s", reg.Name, de.Message)
		}
		return duet.WrapError(duet.CodeMCPUnreachable, errors.Join(sdkErr, err), "cannot reach MCP server %s at %s: %s", reg.Name, reg.URL, netReason(err))
	}
	switch {
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		return authError(reg, a.status, a.wwwAuth, sdkErr)
	case a.status >= 300 && a.status < 400:
		to := redactURL(reg.URL, a.location)
		hint := "register the MCP endpoint itself"
		if looksLikeLogin(to) {
			hint = "it looks like a login page: the endpoint wants a signed-in browser, not an MCP client; register the MCP endpoint itself and pass credentials with --bearer-token-env or --header-env"
		}
		return mismatch(sdkErr, reg, "it answered an MCP request with a redirect (%d) to %s; %s", a.status, to, hint)
	case a.ctype == "text/html" || bytes.HasPrefix(bytes.TrimSpace(bytes.ToLower(a.body)), []byte("<!doctype html")) ||
		bytes.HasPrefix(bytes.TrimSpace(bytes.ToLower(a.body)), []byte("<html")):
		what := "an HTML page"
		if t := htmlTitle(a.body); t != "" {
			what += fmt.Sprintf(" titled %q", t)
		}
		if looksLikeLogin(string(a.body)) {
			what += ", apparently a login form"
		}
		return mismatch(sdkErr, reg, "it answered an MCP initialize request (HTTP %d) with %s, not JSON-RPC; check the URL path", a.status, what)
	}
	var obj map[string]json.RawMessage
	isJSON := json.Unmarshal(a.body, &obj) == nil && obj != nil
	if !isJSON && a.ctype == "text/event-stream" {
		if msg := firstSSEData(a.body); msg != nil {
			isJSON = json.Unmarshal(msg, &obj) == nil && obj != nil
		}
	}
	if isJSON {
		if _, ok := obj["jsonrpc"]; ok {
			var m struct {
				Result *struct {
					ProtocolVersion string `json:"protocolVersion"`
				} `json:"result"`
				Error *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			_ = json.Unmarshal(mustMsg(obj), &m)
			switch {
			case m.Error != nil:
				return duet.WrapError(duet.CodeMCPProtocolMismatch, sdkErr, "MCP server %s refused the MCP handshake: JSON-RPC error %d: %s",
					reg.Name, m.Error.Code, sanitize(m.Error.Message, 200))
			case m.Result != nil:
				return duet.WrapError(duet.CodeMCPProtocolMismatch, sdkErr, "MCP server %s answered the handshake (protocol version %q) but no session could be established: %s",
					reg.Name, sanitize(m.Result.ProtocolVersion, 40), sanitize(sdkErrText(sdkErr), 200))
			}
		}
		if lite := c.liteProbe(ctx, reg, hc, obj); lite != "" {
			return mismatch(sdkErr, reg, "%s", lite)
		}
		return mismatch(sdkErr, reg, "it answered an MCP initialize request (HTTP %d) with plain JSON that has no jsonrpc field (keys: %s); it looks like a REST API, not MCP",
			a.status, jsonKeys(obj))
	}
	if lite := c.liteProbe(ctx, reg, hc, nil); lite != "" {
		return mismatch(sdkErr, reg, "%s", lite)
	}
	if a.status == http.StatusNotFound || a.status == http.StatusMethodNotAllowed {
		return mismatch(sdkErr, reg, "it answered %d %s to an MCP POST (Streamable HTTP) and did not open a legacy SSE stream either; check the URL path",
			a.status, http.StatusText(a.status))
	}
	if a.status >= 500 {
		return duet.WrapError(duet.CodeMCPUnreachable, sdkErr, "MCP server %s answered %d %s", reg.Name, a.status, http.StatusText(a.status))
	}
	snippet := sanitize(string(a.body), 120)
	if snippet == "" {
		snippet = "(empty body)"
	}
	return mismatch(sdkErr, reg, "it answered an MCP initialize request with HTTP %d %s: %s", a.status, orUnknown(a.ctype), snippet)
}

func mustMsg(obj map[string]json.RawMessage) []byte {
	b, _ := json.Marshal(obj)
	return b
}

func orUnknown(s string) string {
	if s == "" {
		return "(no content type)"
	}
	return s
}

// liteProbe asks whether an MCP-Lite provider answers at the URL: the first
// answer (obj, may be nil) has MCP-Lite's shape, or POST <base>/tools/list
// answers {"tools": [...]}. It returns the diagnosis or "".
func (c *Client) liteProbe(ctx context.Context, reg *duet.MCPServer, hc *http.Client, obj map[string]json.RawMessage) string {
	const advice = "MCP-Lite is a simplified REST dialect (POST …/tools/list, POST …/tools/call); Duet calls standard MCP servers (JSON-RPC over Streamable HTTP): register the provider's standard MCP endpoint instead"
	if obj != nil {
		_, content := obj["content"]
		_, isErr := obj["isError"]
		if content && isErr {
			return "it answered with an MCP-Lite tool result ({content, isError}) instead of JSON-RPC. " + advice
		}
	}
	u, err := url.Parse(reg.URL)
	if err != nil {
		return ""
	}
	base := strings.TrimSuffix(u.Path, "/")
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/tools/call"), "/tools/list")
	u.Path = base + "/tools/list"
	a, err := rawPost(ctx, hc, u.String(), `{}`)
	if err != nil || a.status/100 != 2 {
		return ""
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(a.body, &list) != nil || list.Tools == nil {
		return ""
	}
	return fmt.Sprintf("it is an MCP-Lite endpoint (POST %s answered a list of %d tools). %s", u.Path, len(list.Tools), advice)
}

// redactURL resolves a Location against the server URL and drops its query
// and fragment, which may carry state or tokens.
func redactURL(base, location string) string {
	if location == "" {
		return "(no Location header)"
	}
	b, err := url.Parse(base)
	if err != nil {
		return "(an invalid Location)"
	}
	l, err := b.Parse(location)
	if err != nil {
		return "(an invalid Location)"
	}
	l.RawQuery, l.Fragment, l.User = "", "", nil
	return sanitize(l.String(), 200)
}

var loginRe = regexp.MustCompile(`(?i)(login|log-in|signin|sign-in|sign_in|sso|oauth|authorize|auth/|password)`)

func looksLikeLogin(s string) bool { return loginRe.MatchString(s) }

var titleRe = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)

func htmlTitle(b []byte) string {
	m := titleRe.FindSubmatch(b)
	if m == nil {
		return ""
	}
	return sanitize(string(m[1]), 80)
}

func jsonKeys(obj map[string]json.RawMessage) string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, sanitize(k, 40))
	}
	sort.Strings(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], "…")
	}
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// firstSSEData returns the data of the first event of an SSE body.
func firstSSEData(b []byte) []byte {
	var data [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			if len(data) > 0 {
				return bytes.Join(data, []byte("\n"))
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	if len(data) > 0 {
		return bytes.Join(data, []byte("\n"))
	}
	return nil
}

// sanitize makes outside text safe for a one-line message (escape.Line).
func sanitize(s string, n int) string { return escape.Line(s, n) }

// sdkErrText is the SDK's error text without the Go-internal prefixes that
// add nothing for a user.
func sdkErrText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
