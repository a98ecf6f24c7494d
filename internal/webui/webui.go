// Package webui is Duet's web console: server-rendered pages (html/template,
// every value escaped) over the same api.Service as the REST API, so every
// action goes through the catalog's governance with callSource web.
// Templates and static files are embedded; the one script is a static file
// (the Content-Security-Policy allows no inline script). A browser signs in
// with a personal access token, exchanged for an HttpOnly session cookie,
// or comes through an SSO proxy; every state change carries the session's
// CSRF token.
package webui

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/duet-test/duet"
	"github.com/duet-test/duet/internal/api"
	"github.com/duet-test/duet/internal/auth"
	"github.com/duet-test/duet/internal/catalog"
	"github.com/duet-test/duet/internal/recorder"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the console.
type Options struct {
	Service *api.Service
	Auth    *auth.Authenticator
	// Codes maps error codes to HTTP statuses (httpapi.Codes).
	Codes        api.Codes
	MaxBodyBytes int64 // 0 means 4 MiB
	Logger       *slog.Logger
	Version      string
	// Recorder holds the live recording sessions (recorder.go); nil: the
	// recorder's pages answer BROWSER_UNAVAILABLE.
	Recorder *recorder.Manager
}

// Console serves the web console.
type Console struct {
	o     Options
	svc   *api.Service
	pages map[string]*template.Template
}

// CSP is the console's Content-Security-Policy: its own script, styles
// and images only (and data: images), no inline script, no framing by
// other sites.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"

// New returns the console.
func New(o Options) *Console {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Console{o: o, svc: o.Service, pages: map[string]*template.Template{}}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		c.pages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, n))
	}
	return c
}

// Register adds the console's routes to mux.
func (c *Console) Register(mux *http.ServeMux) {
	static, _ := fs.Sub(staticFS, "static")
	fileServer := http.StripPrefix("/static/", http.FileServerFS(static))
	mux.Handle("GET /static/", secured(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		fileServer.ServeHTTP(w, r)
	})))
	favicon, err := fs.ReadFile(static, "favicon.ico")
	if err != nil {
		panic("webui: " + err.Error())
	}
	mux.Handle("GET /favicon.ico", secured(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/x-icon")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Write(favicon)
	})))
	mux.Handle("GET /signin", secured(http.HandlerFunc(c.signinForm)))
	mux.Handle("POST /signin", secured(http.HandlerFunc(c.signin)))
	mux.Handle("POST /signout", c.page(c.signout))
	mux.Handle("GET /{$}", c.page(func(w http.ResponseWriter, r *http.Request, v *view) error {
		http.Redirect(w, r, "/tasks", http.StatusSeeOther)
		return nil
	}))
	for pattern, rt := range c.routes() {
		mux.Handle(pattern, c.page(c.checkQuery(rt)))
	}
	c.registerEvidence(mux) // trace.go, baseline.go
}

// routes are the console's pages and forms by pattern.
func (c *Console) routes() map[string]route {
	m := map[string]route{
		"GET /tasks":                                  {c.tasks, qs("q", "cursor")},
		"GET /tasks/apply":                            {fn: c.applyForm},
		"POST /tasks/apply":                           {fn: c.apply},
		"GET /tasks/{id}":                             {fn: c.task},
		"GET /tasks/{id}/edit":                        {fn: c.editSuite},
		"POST /tasks/{id}/runs":                       {fn: c.startRun},
		"POST /tasks/{id}/share":                      {fn: c.share},
		"POST /tasks/{id}/unshare":                    {fn: c.unshare},
		"POST /tasks/{id}/transfer":                   {fn: c.transfer},
		"POST /tasks/{id}/schedules":                  {fn: c.addSchedule},
		"POST /tasks/{id}/schedules/{sid}/{action}":   {fn: c.changeSchedule},
		"GET /tasks/{id}/trends":                      {c.trends, wholes("runs")},
		"GET /tasks/{id}/webhooks":                    {fn: c.webhooks},
		"POST /tasks/{id}/webhooks":                   {fn: c.addWebhook},
		"POST /tasks/{id}/webhooks/{wid}/{action}":    {fn: c.changeWebhook},
		"POST /tasks/{id}/deliveries/{did}/redeliver": {fn: c.redeliver},
		"GET /alerts":                                 {fn: c.alerts},
		"GET /secrets":                                {c.secrets, qs("user")},
		"POST /secrets":                               {fn: c.setSecret},
		"POST /secrets/{name}/delete":                 {fn: c.deleteSecret},
		"GET /cases/{id}":                             {c.caseDetail, wholes("from", "to")},
		"POST /cases/{id}/approve":                    {fn: c.approve},
		"GET /runs":                                   {c.runs, qs("task", "status", "branch", "commit", "cursor")},
		"GET /runs/{id}":                              {c.run, qs("cursor")},
		"POST /runs/{id}/cancel":                      {fn: c.cancel},
		"GET /runs/{id}/events":                       {fn: c.events},
		"GET /runs/{id}/report":                       {c.report, qs("format", "cursor", "download")},
		"GET /assets":                                 {c.assets, qs("kind")},
		"POST /assets":                                {fn: c.saveAsset},
		"GET /assets/{kind}/{owner}/{name}":           {c.asset, wholes("version")},
		"POST /assets/{kind}/{name}/share":            {fn: c.shareAsset},
		"POST /assets/{kind}/{name}/delete":           {fn: c.deleteAsset},
		"GET /servers":                                {fn: c.servers},
		"POST /servers":                               {fn: c.register},
		"GET /servers/{name}":                         {fn: c.server},
		"POST /servers/{name}/sync":                   {fn: c.syncServer},
		"POST /servers/{name}/remove":                 {fn: c.removeServer},
		"GET /servers/{name}/tools/{tool}":            {fn: c.toolForm},
		"POST /servers/{name}/tools/{tool}":           {fn: c.callTool},
		"GET /teams":                                  {fn: c.teams},
		"POST /teams":                                 {fn: c.createTeam},
		"GET /teams/{team}":                           {fn: c.team},
		"POST /teams/{team}/members":                  {fn: c.addMember},
		"POST /teams/{team}/members/remove":           {fn: c.removeMember},
		"POST /teams/{team}/members/role":             {fn: c.setTeamRole},
		"POST /teams/{team}/delete":                   {fn: c.deleteTeam},
		"POST /teams/{team}/servers":                  {fn: c.addTeamServer},
		"POST /teams/{team}/servers/{name}/remove":    {fn: c.removeTeamServer},
		"POST /teams/{team}/servers/{name}/register":  {fn: c.registerTeamServer},
		"GET /audit":                                  {c.audit, qs("view", "user", "tool", "method", "server", "source", "outcome", "traceId", "before")},
		"GET /tokens":                                 {fn: c.tokens},
		"POST /tokens":                                {fn: c.createToken},
		"POST /tokens/{id}/revoke":                    {fn: c.revokeToken},
		"GET /baselines":                              {c.baselines, qs("status")},
	}
	c.recorderRoutes(m)
	return m
}

// secured sets the headers every console response carries.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "SAMEORIGIN")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// view is what every page template sees.
type view struct {
	User   string
	Admin  bool
	CSRF   string
	Title  string
	Nav    string
	Notice string
	Error  string
	// Broken is how many cases of the tasks the user can see a change
	// of an MCP tool broke (the nav's badge: the cases' owners see it on
	// every page).
	Broken  int
	Version string
	Data    any

	caller duet.Caller
}

type handler func(w http.ResponseWriter, r *http.Request, v *view) error

// page authenticates a console request (session cookie or SSO proxy),
// checks the CSRF token of a state change, and runs fn as the signed-in
// user with callSource web. A browser that is not signed in is sent to
// the sign-in page; a refused state change is audited and answered 401 or
// 403.
func (c *Console) page(fn handler) http.Handler {
	return secured(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, _ := duet.CallerFromContext(r.Context())
		caller.Source = duet.SourceWeb
		id, err := c.o.Auth.AuthenticateConsole(r.Context(), r, true)
		if err == nil && id.NewCookie != "" {
			auth.SetSessionCookie(w, r, id.NewCookie, id.Session.ExpiresAt)
		}
		if err == nil && !auth.SafeMethod(r.Method) {
			r.Body = http.MaxBytesReader(w, r.Body, c.o.MaxBodyBytes)
			presented := r.Header.Get(auth.HeaderCSRF)
			if presented == "" {
				if perr := r.ParseForm(); perr != nil {
					err = formError(perr)
				}
				presented = r.PostForm.Get(auth.FormCSRF)
			}
			if err == nil {
				err = auth.CheckCSRF(id, r.Method, presented)
			}
		}
		if err != nil {
			caller.UserID = id.UserID
			c.svc.Catalog().Refuse(catalog.Op{Caller: caller, Method: "http " + r.Method + " " + r.URL.Path}, err)
			if duet.ErrorCode(err) == duet.CodeUnauthenticated && auth.SafeMethod(r.Method) {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			c.renderError(w, r, &view{User: id.UserID}, err)
			return
		}
		caller.UserID, caller.TokenID = id.UserID, id.TokenID
		v := &view{User: id.UserID, Admin: c.svc.Admin(id.UserID), CSRF: id.Session.CSRF, Version: c.o.Version, caller: caller,
			Notice: notices[r.URL.Query().Get("done")]}
		if auth.SafeMethod(r.Method) {
			v.Broken = c.svc.BrokenCases(r.Context(), caller)
		}
		if err := fn(w, r, v); err != nil {
			c.renderError(w, r, v, err)
		}
	}))
}

// notices are the messages a redirect after a change shows (?done=...):
// fixed texts, so a link cannot make the console say anything else.
var notices = map[string]string{
	"shared": "Shared.", "unshared": "No longer shared.", "transferred": "Task handed over.",
	"cancelled": "Cancellation requested: the run stops within a second or two.", "cancelled-now": "Cancelled.",
	"ended": "The run had already ended: there was nothing to cancel.",
	"saved": "Saved.", "deleted": "Deleted.", "synced": "Catalog synced.", "removed": "Removed.", "registered": "Registered and synced.",
	"redelivered": "Delivery queued again.",
	"created":     "Created.", "approved": "Approved.", "added": "Added.", "revoked": "Token revoked.", "applied": "Suite applied.", "role": "Role changed.",
}

func (c *Console) render(w http.ResponseWriter, status int, name string, v *view) error {
	t, ok := c.pages[name]
	if !ok {
		return fmt.Errorf("webui: no page %q", name)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		return fmt.Errorf("webui: rendering %s: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, err := buf.WriteTo(w)
	return err
}

func (c *Console) renderError(w http.ResponseWriter, r *http.Request, v *view, err error) {
	code := duet.ErrorCode(err)
	status := http.StatusInternalServerError
	if c.o.Codes != nil {
		status = c.o.Codes.Status(code)
	}
	if code == duet.CodeInternal {
		c.o.Logger.ErrorContext(r.Context(), "console page failed", "path", r.URL.Path, "err", err)
	}
	v.Title, v.Data = "Error", struct {
		Code    duet.Code
		Message string
	}{code, duet.ErrorMessage(err)}
	if rerr := c.render(w, status, "error", v); rerr != nil {
		http.Error(w, string(code), status)
	}
}

// redirect answers a change with 303 See Other to path, with a notice.
func redirect(w http.ResponseWriter, r *http.Request, path, done string) error {
	if done != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "done=" + done
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
	return nil
}

// ---- sign-in ----

type signinData struct {
	Next  string
	SSO   bool
	Error string
	CSRF  string // the sign-in form's token (signinCookie)
}

// signinCookie holds the sign-in form's CSRF token until the form is
// posted: a sign-in must come from Duet's own form, so another site
// cannot sign a browser in to an account it chose (login CSRF) and have
// its person enter credentials there.
const signinCookie = "duet_signin"

// signinToken returns the sign-in form's token: the browser's own, or a
// new one set in signinCookie.
func signinToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(signinCookie); err == nil && len(c.Value) == 32 {
		return c.Value
	}
	b := make([]byte, 24)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: v, Path: "/signin", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: auth.OverTLS(r), MaxAge: 3600})
	return v
}

// localPath returns p if a browser reads it as a path on this site, else
// /tasks: it starts with one "/", and has no backslash (read as "/"), no
// space and no control character (a browser drops tabs and newlines, so
// "/\t/evil.example" would become "//evil.example", another site).
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.IndexFunc(p, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r)
	}) >= 0 {
		return "/tasks"
	}
	return p
}

func (c *Console) signinForm(w http.ResponseWriter, r *http.Request) {
	if id, err := c.o.Auth.AuthenticateConsole(r.Context(), r, true); err == nil {
		if id.NewCookie != "" {
			auth.SetSessionCookie(w, r, id.NewCookie, id.Session.ExpiresAt)
		}
		http.Redirect(w, r, localPath(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.render(w, http.StatusOK, "signin", &view{Title: "Sign in", Version: c.o.Version,
		Data: signinData{Next: localPath(r.URL.Query().Get("next")), SSO: c.o.Auth.SSOConfigured(), CSRF: signinToken(w, r)}})
}

func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	var err error
	if perr := r.ParseForm(); perr != nil {
		err = formError(perr)
	}
	next := localPath(r.PostForm.Get("next"))
	var cookie string
	var sess *duet.Session
	if err == nil {
		ck, cerr := r.Cookie(signinCookie)
		presented := r.PostForm.Get(auth.FormCSRF)
		if cerr != nil || presented == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(presented)) != 1 {
			err = duet.Errorf(duet.CodePermissionDenied, "missing or invalid CSRF token: reload the sign-in page and try again")
		}
	}
	if err == nil {
		cookie, sess, err = c.o.Auth.SignIn(r.Context(), r.PostForm.Get("token"))
	}
	caller, _ := duet.CallerFromContext(r.Context())
	caller.Source = duet.SourceWeb
	if err != nil {
		c.svc.Catalog().Refuse(catalog.Op{Caller: caller, Method: "signIn"}, err)
		c.render(w, StatusOf(c.o.Codes, err), "signin", &view{Title: "Sign in", Version: c.o.Version,
			Data: signinData{Next: next, SSO: c.o.Auth.SSOConfigured(), Error: duet.ErrorMessage(err), CSRF: signinToken(w, r)}})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Path: "/signin", MaxAge: -1})
	caller.UserID = sess.UserID
	c.svc.Catalog().Audit(&duet.AuditRecord{Time: time.Now(), TraceID: caller.TraceID, CallSource: duet.SourceWeb, Caller: sess.UserID, Method: "signIn", Outcome: duet.OutcomeOK})
	auth.SetSessionCookie(w, r, cookie, sess.ExpiresAt)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) signout(w http.ResponseWriter, r *http.Request, v *view) error {
	if err := c.o.Auth.SignOut(r.Context(), r); err != nil {
		return err
	}
	auth.SetSessionCookie(w, r, "", time.Time{})
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}

// StatusOf returns the HTTP status of err's code under codes.
func StatusOf(codes api.Codes, err error) int {
	if codes == nil {
		return http.StatusInternalServerError
	}
	return codes.Status(duet.ErrorCode(err))
}

// route is a console page: its handler and the query parameters it reads.
type route struct {
	fn    handler
	query []queryParam
}

// queryParam is a query parameter a page reads; whole ones are whole
// numbers.
type queryParam struct {
	name  string
	whole bool
}

func qs(names ...string) []queryParam {
	ps := make([]queryParam, len(names))
	for i, n := range names {
		ps[i] = queryParam{name: n}
	}
	return ps
}

func wholes(names ...string) []queryParam {
	ps := qs(names...)
	for i := range ps {
		ps[i].whole = true
	}
	return ps
}

// checkQuery runs rt's page once its query string has been read strictly,
// as the REST API reads its own: well-formed, only the parameters the
// page reads (and "done", the notice after a change, on any page), each
// at most once, whole numbers where the page wants one. A refusal is
// INVALID_ARGUMENT, audited once, shown as the error page.
func (c *Console) checkQuery(rt route) handler {
	return func(w http.ResponseWriter, r *http.Request, v *view) error {
		if err := readQuery(r.URL.RawQuery, rt.query); err != nil {
			c.svc.Catalog().Refuse(catalog.Op{Caller: v.caller, Method: "http " + r.Method + " " + r.URL.Path}, err)
			return err
		}
		return rt.fn(w, r, v)
	}
}

func readQuery(raw string, allowed []queryParam) error {
	if raw == "" {
		return nil
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return duet.Errorf(duet.CodeInvalidArgument, "the query string is malformed")
	}
	for name, vs := range q {
		i := slices.IndexFunc(allowed, func(p queryParam) bool { return p.name == name })
		if i < 0 && name != "done" {
			return duet.Errorf(duet.CodeInvalidArgument, "this page reads no query parameter %.60q", name)
		}
		if len(vs) > 1 {
			return duet.Errorf(duet.CodeInvalidArgument, "query parameter %s is given %d times", name, len(vs))
		}
		if i >= 0 && allowed[i].whole {
			if n, err := strconv.Atoi(vs[0]); vs[0] != "" && (err != nil || n < 0) {
				return duet.Errorf(duet.CodeInvalidArgument, "%s: want a whole number, got %.40q", name, vs[0])
			}
		}
	}
	return nil
}

// formError is the failure of a form that cannot be read: INVALID_ARGUMENT,
// or the code the server gave the reading of the body (a body too slow is
// TIMEOUT, one refused by the address's budget RATE_LIMITED).
func formError(err error) error {
	var de *duet.Error
	if errors.As(err, &de) {
		return duet.WrapError(de.Code, err, "the form cannot be read: %s", de.Message)
	}
	return duet.WrapError(duet.CodeInvalidArgument, err, "the form cannot be read: %v", err)
}
